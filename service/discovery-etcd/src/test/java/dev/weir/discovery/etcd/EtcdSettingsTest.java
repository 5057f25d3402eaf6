package dev.weir.discovery.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.HostPort;
import dev.weir.core.discovery.DiscoveryEnv;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.assertj.core.api.AbstractThrowableAssert;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EtcdSettingsTest {

  /** Asserts that reading {@code env} is refused with a {@link ConfigException}. */
  private static AbstractThrowableAssert<?, ? extends Throwable> assertRefused(
      Map<String, String> env) {
    return assertThatThrownBy(() -> EtcdSettings.fromEnv(new DiscoveryEnv(env)))
        .isInstanceOf(ConfigException.class);
  }

  @Test
  void fromEnv_nothingSet_gubernatorDefaults() {
    EtcdSettings s = EtcdSettings.fromEnv(new DiscoveryEnv(Map.of()));

    assertThat(s.endpoints()).containsExactly("http://localhost:2379");
    assertThat(s.keyPrefix()).isEqualTo("/weir-peers/");
    assertThat(s.keyPrefixVariable()).isEqualTo("WEIR_ETCD_KEY_PREFIX");
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
    assertThat(s.keyPrefixVariable()).isEqualTo("GUBER_ETCD_KEY_PREFIX");
    assertThat(s.dialTimeout()).isEqualTo(Duration.ofMillis(1500));
    assertThat(s.user()).isEqualTo("weir");
    assertThat(s.dataCenter()).isEqualTo("us-east-1");
    assertThat(s.advertiseAddress()).contains("10.1.1.1:1051");
    assertThat(s.toString()).doesNotContain("secret");
  }

  @Test
  void fromEnv_dataCenterUnsetForEtcd_theNodesDataCenterAsGubernatorDefaultsIt() {
    assertThat(
            EtcdSettings.fromEnv(new DiscoveryEnv(Map.of("GUBER_DATA_CENTER", "dc1"))).dataCenter())
        .isEqualTo("dc1");
    assertThat(
            EtcdSettings.fromEnv(new DiscoveryEnv(Map.of("WEIR_DATA_CENTER", "dc2"))).dataCenter())
        .isEqualTo("dc2");
    assertThat(EtcdSettings.fromEnv(new DiscoveryEnv(Map.of())).dataCenter()).isEmpty();
  }

  @Test
  void fromEnv_etcdDataCenterSet_winsOverTheNodesDataCenter() {
    assertThat(
            EtcdSettings.fromEnv(
                    new DiscoveryEnv(
                        Map.of("GUBER_DATA_CENTER", "dc1", "WEIR_ETCD_DATA_CENTER", "dc-etcd")))
                .dataCenter())
        .isEqualTo("dc-etcd");
    assertThat(
            EtcdSettings.fromEnv(
                    new DiscoveryEnv(
                        Map.of("WEIR_DATA_CENTER", "dc1", "GUBER_ETCD_DATA_CENTER", "dc-etcd")))
                .dataCenter())
        .isEqualTo("dc-etcd");
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
    Path ca = resource("tls/cert.pem");
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
    assertRefused(Map.of("WEIR_ETCD_ENDPOINTS", "etcd-0:2379;etcd-1:2379"))
        .hasMessage(
            "WEIR_ETCD_ENDPOINTS='etcd-0:2379;etcd-1:2379' is not valid: expected a comma-separated list of"
                + " host:port or http(s)://host:port URLs (entry 'etcd-0:2379;etcd-1:2379': it holds ';';"
                + " one address has no spaces, commas or semicolons; separate entries with commas)");
    assertRefused(Map.of("GUBER_ETCD_ENDPOINTS", "http://etcd-0:2379 http://etcd-1:2379"))
        .hasMessageContaining("GUBER_ETCD_ENDPOINTS='http://etcd-0:2379 http://etcd-1:2379'")
        .hasMessageContaining("separate entries with commas");
    assertRefused(Map.of("WEIR_ETCD_ENDPOINTS", "etcd-0"))
        .hasMessageContaining("(entry 'etcd-0': missing ':port')");
  }

  @Test
  void fromEnv_urlAndBareEndpoints_accepted() {
    EtcdSettings s =
        EtcdSettings.fromEnv(
            new DiscoveryEnv(Map.of("WEIR_ETCD_ENDPOINTS", "HTTPS://etcd-0:2379/, [fd00::1]:2379")));

    assertThat(s.endpoints()).containsExactly("HTTPS://etcd-0:2379/", "https://[fd00::1]:2379");
  }

  @Test
  void fromEnv_httpsEndpointWithoutTlsVariables_usesTlsWithJvmTrust() {
    EtcdSettings s = EtcdSettings.fromEnv(new DiscoveryEnv(Map.of("WEIR_ETCD_ENDPOINTS", "https://etcd:2379")));

    assertThat(s.tls()).contains(new EtcdSettings.Tls(Optional.empty(), Optional.empty(), Optional.empty(), false));
  }

  @Test
  void fromEnv_httpAndHttpsEndpointsMixed_rejectedNamingVariable() {
    assertRefused(Map.of("WEIR_ETCD_ENDPOINTS", "http://etcd-0:2379,https://etcd-1:2379"))
        .hasMessage(
            "WEIR_ETCD_ENDPOINTS='http://etcd-0:2379,https://etcd-1:2379' is not valid: expected every"
                + " endpoint https:// (TLS) or every endpoint http:// (plaintext), not both");
  }

  @Test
  void fromEnv_tlsVariableWithHttpEndpoint_rejectedNamingBoth() {
    assertRefused(
            Map.of("WEIR_ETCD_ENDPOINTS", "http://etcd:2379", "GUBER_ETCD_TLS_ENABLE", "true"))
        .hasMessage(
            "WEIR_ETCD_ENDPOINTS='http://etcd:2379' is not valid: expected https:// or bare host:port"
                + " endpoints while TLS towards etcd is on (GUBER_ETCD_TLS_ENABLE is set); an http:// endpoint"
                + " is plaintext");
  }

  @Test
  void fromEnv_endpointsJetcdCannotDial_rejectedNamingVariableAndEntry() {
    for (String endpoint : List.of("dns+srv:///etcd.local", "ip:///10.0.0.1:2379", "etcd_0:2379", "http://etcd_0:2379")) {
      assertThatThrownBy(() -> EtcdSettings.fromEnv(new DiscoveryEnv(Map.of("WEIR_ETCD_ENDPOINTS", endpoint))))
          .as(endpoint)
          .isInstanceOf(ConfigException.class)
          .hasMessageStartingWith("WEIR_ETCD_ENDPOINTS='" + endpoint + "' is not valid: expected")
          .hasMessageContaining("(entry '" + endpoint + "': ");
    }
  }

  @Test
  void buildClient_everyEndpointFromEnvAccepts_buildsAClient() throws Exception {
    for (String endpoints :
        List.of(
            "localhost:2379",
            "etcd-0:2379, etcd-1.etcd.svc:2379",
            "http://127.0.0.1:2379/",
            "HTTPS://etcd-0:2379/",
            "https://[fd00::1]:2379",
            "[fd00::1]:2379",
            "http://ETCD.example.com:2379")) {
      EtcdSettings settings = EtcdSettings.fromEnv(new DiscoveryEnv(Map.of("WEIR_ETCD_ENDPOINTS", endpoints)));
      EtcdDiscovery.buildClient(settings).close();
    }
  }

  @Test
  void fromEnv_tlsFilesNotPem_rejectedNamingVariable(@TempDir Path dir) throws Exception {
    Path junk = Files.writeString(dir.resolve("junk.pem"), "not pem");
    Path cert = resource("tls/cert.pem");
    Path key = resource("tls/key.pem");

    assertRefused(Map.of("WEIR_ETCD_TLS_CA", junk.toString()))
        .hasMessageStartingWith("WEIR_ETCD_TLS_CA='" + junk + "' is not valid: expected a PEM file of CA certificates");
    assertRefused(
            Map.of("WEIR_ETCD_TLS_CERT", junk.toString(), "WEIR_ETCD_TLS_KEY", key.toString()))
        .hasMessageStartingWith("WEIR_ETCD_TLS_CERT='" + junk + "' is not valid: expected a PEM file of the client certificate");
    assertRefused(
            Map.of("WEIR_ETCD_TLS_CERT", cert.toString(), "GUBER_ETCD_TLS_KEY", junk.toString()))
        .hasMessageStartingWith("GUBER_ETCD_TLS_KEY='" + junk + "' is not valid: expected a PEM (PKCS#8) file of the client key");
  }

  @Test
  void buildClient_validTlsFiles_buildsAClient() throws Exception {
    String cert = resource("tls/cert.pem").toString();
    EtcdSettings settings =
        EtcdSettings.fromEnv(
            new DiscoveryEnv(
                Map.of("WEIR_ETCD_TLS_CA", cert, "WEIR_ETCD_TLS_CERT", cert, "WEIR_ETCD_TLS_KEY",
                    resource("tls/key.pem").toString())));

    EtcdDiscovery.buildClient(settings).close();
  }

  private static Path resource(String name) throws Exception {
    return Path.of(EtcdSettingsTest.class.getClassLoader().getResource(name).toURI());
  }

  @Test
  void fromEnv_advertiseAddressNotOneCallableAddress_errorNamesVariableAndProblem() {
    assertRefused(Map.of("WEIR_ETCD_ADVERTISE_ADDRESS", "a:1;b:2"))
        .hasMessage(
            "WEIR_ETCD_ADVERTISE_ADDRESS='a:1;b:2' is not valid: expected host:port that peers can call,"
                + " e.g. 10.0.0.5:1051 or [fd00::5]:1051 (it holds ';'; one address has no spaces, commas or"
                + " semicolons)");
    assertRefused(Map.of("GUBER_ETCD_ADVERTISE_ADDRESS", "0.0.0.0:1051"))
        .hasMessageContaining("GUBER_ETCD_ADVERTISE_ADDRESS='0.0.0.0:1051'")
        .hasMessageContaining("a wildcard host is no address peers can call");
  }

  @Test
  void fromEnv_advertiseAddressHostGrpcRefuses_errorNamesVariableValueAndWhatIsAllowed() {
    assertRefused(Map.of("WEIR_ETCD_ADVERTISE_ADDRESS", "weir_1:1051"))
        .hasMessage(
            "WEIR_ETCD_ADVERTISE_ADDRESS='weir_1:1051' is not valid: expected host:port that peers"
                + " can call, e.g. 10.0.0.5:1051 or [fd00::5]:1051 (host 'weir_1' is refused by"
                + " gRPC; give "
                + HostPort.GRPC_HOSTS
                + ")");
    assertRefused(Map.of("WEIR_ETCD_ADVERTISE_ADDRESS", "10.0.0.5:0"))
        .hasMessageContaining("WEIR_ETCD_ADVERTISE_ADDRESS='10.0.0.5:0' is not valid")
        .hasMessageContaining("1 to 65535");
  }

  @Test
  void fromEnv_certWithoutKey_rejected(@TempDir Path dir) throws Exception {
    Path cert = resource("tls/cert.pem");

    assertThatThrownBy(() -> EtcdSettings.fromEnv(new DiscoveryEnv(Map.of("WEIR_ETCD_TLS_CERT", cert.toString()))))
        .hasMessageContaining("WEIR_ETCD_TLS_KEY")
        .hasMessageContaining("WEIR_ETCD_TLS_CERT");
  }

  @Test
  void fromEnv_aliasCertWithoutKey_rejectedNamingTheVariableSet() throws Exception {
    Path cert = resource("tls/cert.pem");

    assertRefused(Map.of("GUBER_ETCD_TLS_CERT", cert.toString()))
        .hasMessage(
            "GUBER_ETCD_TLS_KEY='' is not valid: expected set together with GUBER_ETCD_TLS_CERT='"
                + cert
                + "'");
  }

  @Test
  void fromEnv_aliasKeyWithoutCert_rejectedNamingTheVariableSet() throws Exception {
    Path key = resource("tls/key.pem");

    assertRefused(Map.of("GUBER_ETCD_TLS_KEY", key.toString()))
        .hasMessage(
            "GUBER_ETCD_TLS_CERT='' is not valid: expected set together with GUBER_ETCD_TLS_KEY='"
                + key
                + "'");
  }

  @Test
  void constructor_emptyEndpoints_rejected() {
    assertThatThrownBy(
            () -> new EtcdSettings(List.of(), "/p/", Duration.ofSeconds(1), Duration.ofSeconds(5), "", "",
                Optional.empty(), "", Optional.empty(), EtcdSettings.KEY_PREFIX_VARIABLE))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
