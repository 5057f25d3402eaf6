package dev.weir.discovery.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.ConfigException;
import dev.weir.core.discovery.DiscoveryEnv;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EtcdSettingsTest {

  @Test
  void fromEnv_nothingSet_gubernatorDefaults() {
    EtcdSettings s = EtcdSettings.fromEnv(new DiscoveryEnv(Map.of()));

    assertThat(s.endpoints()).containsExactly("http://localhost:2379");
    assertThat(s.keyPrefix()).isEqualTo("/weir-peers/");
    assertThat(s.dialTimeout()).isEqualTo(Duration.ofSeconds(5));
    assertThat(s.leaseTtl()).isEqualTo(Duration.ofSeconds(30));
    assertThat(s.tls()).isEmpty();
    assertThat(s.user()).isEmpty();
    assertThat(s.advertiseAddress()).isEmpty();
  }

  @Test
  void fromEnv_guberAliases_areRead() {
    EtcdSettings s =
        EtcdSettings.fromEnv(
            new DiscoveryEnv(
                Map.of(
                    "GUBER_ETCD_ENDPOINTS", "etcd-0:2379, etcd-1:2379",
                    "GUBER_ETCD_KEY_PREFIX", "/gubernator-peers",
                    "GUBER_ETCD_DIAL_TIMEOUT", "1500ms",
                    "GUBER_ETCD_USER", "weir",
                    "GUBER_ETCD_PASSWORD", "secret",
                    "GUBER_ETCD_DATA_CENTER", "us-east-1",
                    "GUBER_ETCD_ADVERTISE_ADDRESS", "10.1.1.1:1051")));

    assertThat(s.endpoints()).containsExactly("http://etcd-0:2379", "http://etcd-1:2379");
    assertThat(s.keyPrefix()).isEqualTo("/gubernator-peers");
    assertThat(s.dialTimeout()).isEqualTo(Duration.ofMillis(1500));
    assertThat(s.user()).isEqualTo("weir");
    assertThat(s.dataCenter()).isEqualTo("us-east-1");
    assertThat(s.advertiseAddress()).contains("10.1.1.1:1051");
    assertThat(s.toString()).doesNotContain("secret");
  }

  @Test
  void fromEnv_weirNameWinsOverAlias() {
    EtcdSettings s =
        EtcdSettings.fromEnv(
            new DiscoveryEnv(Map.of("WEIR_ETCD_KEY_PREFIX", "/a/", "GUBER_ETCD_KEY_PREFIX", "/b/")));

    assertThat(s.keyPrefix()).isEqualTo("/a/");
  }

  @Test
  void fromEnv_tlsFiles_enableTlsAndHttpsEndpoints(@TempDir Path dir) throws Exception {
    Path ca = Files.writeString(dir.resolve("ca.pem"), "x");
    EtcdSettings s =
        EtcdSettings.fromEnv(new DiscoveryEnv(Map.of("WEIR_ETCD_TLS_CA", ca.toString())));

    assertThat(s.tls()).contains(new EtcdSettings.Tls(Optional.of(ca), Optional.empty(), Optional.empty(), false));
    assertThat(s.endpoints()).containsExactly("https://localhost:2379");
  }

  @Test
  void fromEnv_tlsEnableOnly_usesTlsWithJvmTrust() {
    EtcdSettings s = EtcdSettings.fromEnv(new DiscoveryEnv(Map.of("WEIR_ETCD_TLS_ENABLE", "true")));

    assertThat(s.tls()).isPresent();
  }

  @Test
  void fromEnv_badValues_oneLineNamingVariableValueAndAllowed() {
    assertThatThrownBy(() -> EtcdSettings.fromEnv(new DiscoveryEnv(Map.of("GUBER_ETCD_DIAL_TIMEOUT", "5"))))
        .hasMessageStartingWith("GUBER_ETCD_DIAL_TIMEOUT='5' is not valid: expected a duration from 1ms to");
    assertThatThrownBy(() -> EtcdSettings.fromEnv(new DiscoveryEnv(Map.of("WEIR_ETCD_TLS_CA", "/nope/ca.pem"))))
        .hasMessage("WEIR_ETCD_TLS_CA='/nope/ca.pem' is not valid: expected a readable file");
    assertThatThrownBy(() -> EtcdSettings.fromEnv(new DiscoveryEnv(Map.of("WEIR_ETCD_TLS_ENABLE", "maybe"))))
        .hasMessage("WEIR_ETCD_TLS_ENABLE='maybe' is not valid: expected true or false (also t/f or 1/0)");
    assertThatThrownBy(() -> EtcdSettings.fromEnv(new DiscoveryEnv(Map.of("WEIR_ETCD_LEASE_TTL", "500ms"))))
        .hasMessageStartingWith("WEIR_ETCD_LEASE_TTL='500ms' is not valid: expected a duration from 1s to");
  }

  @Test
  void fromEnv_endpointsNotSeparatedByCommas_errorNamesVariableEntryAndSeparator() {
    assertThatThrownBy(
            () -> EtcdSettings.fromEnv(new DiscoveryEnv(Map.of("WEIR_ETCD_ENDPOINTS", "etcd-0:2379;etcd-1:2379"))))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_ETCD_ENDPOINTS='etcd-0:2379;etcd-1:2379' is not valid: expected a comma-separated list of"
                + " host:port or http(s)://host:port URLs (entry 'etcd-0:2379;etcd-1:2379': it holds ';';"
                + " one address has no spaces, commas or semicolons; separate entries with commas)");
    assertThatThrownBy(
            () -> EtcdSettings.fromEnv(new DiscoveryEnv(Map.of("GUBER_ETCD_ENDPOINTS", "http://etcd-0:2379 http://etcd-1:2379"))))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("GUBER_ETCD_ENDPOINTS='http://etcd-0:2379 http://etcd-1:2379'")
        .hasMessageContaining("separate entries with commas");
    assertThatThrownBy(() -> EtcdSettings.fromEnv(new DiscoveryEnv(Map.of("WEIR_ETCD_ENDPOINTS", "etcd-0"))))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("(entry 'etcd-0': missing ':port')");
  }

  @Test
  void fromEnv_urlAndBareEndpoints_accepted() {
    EtcdSettings s =
        EtcdSettings.fromEnv(
            new DiscoveryEnv(Map.of("WEIR_ETCD_ENDPOINTS", "HTTPS://etcd-0:2379/, [fd00::1]:2379, dns+srv:///etcd.local")));

    assertThat(s.endpoints())
        .containsExactly("HTTPS://etcd-0:2379/", "http://[fd00::1]:2379", "dns+srv:///etcd.local");
  }

  @Test
  void fromEnv_advertiseAddressNotOneCallableAddress_errorNamesVariableAndProblem() {
    assertThatThrownBy(
            () -> EtcdSettings.fromEnv(new DiscoveryEnv(Map.of("WEIR_ETCD_ADVERTISE_ADDRESS", "a:1;b:2"))))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_ETCD_ADVERTISE_ADDRESS='a:1;b:2' is not valid: expected host:port that peers can call,"
                + " e.g. 10.0.0.5:1051 or [fd00::5]:1051 (it holds ';'; one address has no spaces, commas or"
                + " semicolons)");
    assertThatThrownBy(
            () -> EtcdSettings.fromEnv(new DiscoveryEnv(Map.of("GUBER_ETCD_ADVERTISE_ADDRESS", "0.0.0.0:1051"))))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("GUBER_ETCD_ADVERTISE_ADDRESS='0.0.0.0:1051'")
        .hasMessageContaining("a wildcard host is no address peers can call");
  }

  @Test
  void fromEnv_certWithoutKey_rejected(@TempDir Path dir) throws Exception {
    Path cert = Files.writeString(dir.resolve("c.pem"), "x");

    assertThatThrownBy(() -> EtcdSettings.fromEnv(new DiscoveryEnv(Map.of("WEIR_ETCD_TLS_CERT", cert.toString()))))
        .hasMessageContaining("WEIR_ETCD_TLS_KEY")
        .hasMessageContaining("WEIR_ETCD_TLS_CERT");
  }

  @Test
  void constructor_emptyEndpoints_rejected() {
    assertThatThrownBy(
            () -> new EtcdSettings(List.of(), "/p/", Duration.ofSeconds(1), Duration.ofSeconds(5), "", "",
                Optional.empty(), "", Optional.empty()))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
