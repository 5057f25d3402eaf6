package dev.weir.tls;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TlsSettingsTest {

  @Test
  void from_unset_disabled() {
    assertThat(TlsSettings.from(new EnvReader(Map.of()))).isEqualTo(TlsSettings.DISABLED);
    assertThat(TlsSettings.DISABLED.enabled()).isFalse();
  }

  @Test
  void from_guberAliases_readWithGubernatorWords() {
    TlsSettings settings =
        TlsSettings.from(
            new EnvReader(
                Map.of(
                    "GUBER_TLS_CERT", "/c.pem",
                    "GUBER_TLS_KEY", "/k.pem",
                    "GUBER_TLS_CA", "/ca.pem",
                    "GUBER_TLS_CLIENT_AUTH", "require-any-cert",
                    "GUBER_TLS_MIN_VERSION", "1.2")));

    assertThat(settings.enabled()).isTrue();
    assertThat(settings.cert()).contains(Path.of("/c.pem"));
    assertThat(settings.clientAuth()).isEqualTo(ClientAuth.REQUIRE_AND_VERIFY);
    assertThat(settings.protocols()).containsExactly("TLSv1.3", "TLSv1.2");
  }

  @Test
  void from_gubernatorClientCa_refusedRatherThanVerifyingClientsAgainstTheServerCa() {
    assertThatThrownBy(
            () ->
                TlsSettings.from(
                    new EnvReader(
                        Map.of(
                            "GUBER_TLS_CERT", "/c.pem",
                            "GUBER_TLS_KEY", "/k.pem",
                            "GUBER_TLS_CA", "/ca.pem",
                            "GUBER_TLS_CLIENT_AUTH", "require-and-verify",
                            "GUBER_TLS_CLIENT_AUTH_CA_CERT", "/clients-ca.pem"))))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("GUBER_TLS_CLIENT_AUTH_CA_CERT='/clients-ca.pem' is set")
        .hasMessageContaining("another file than GUBER_TLS_CA='/ca.pem'")
        .hasMessageContaining("WEIR_TLS_CA");
  }

  @Test
  void from_gubernatorClientCaNamingTheCaFile_acceptedAsGubernatorVerifiesAgainstTheSameCa() {
    TlsSettings settings =
        TlsSettings.from(
            new EnvReader(
                Map.of(
                    "GUBER_TLS_CERT", "/c.pem",
                    "GUBER_TLS_KEY", "/k.pem",
                    "GUBER_TLS_CA", "/etc/tls/ca.pem",
                    "GUBER_TLS_CLIENT_AUTH", "require-and-verify",
                    "GUBER_TLS_CLIENT_AUTH_CA_CERT", "/etc/tls/./certs/../ca.pem")));

    assertThat(settings.clientAuth()).isEqualTo(ClientAuth.REQUIRE_AND_VERIFY);
    assertThat(settings.ca()).contains(Path.of("/etc/tls/ca.pem"));
  }

  @Test
  void from_gubernatorClientCaWithoutClientAuth_acceptedAsGubernatorNeverReadsIt() {
    TlsSettings settings =
        TlsSettings.from(
            new EnvReader(
                Map.of(
                    "GUBER_TLS_CERT", "/c.pem",
                    "GUBER_TLS_KEY", "/k.pem",
                    "GUBER_TLS_CA", "/ca.pem",
                    "GUBER_TLS_CLIENT_AUTH_CA_CERT", "/clients-ca.pem")));

    assertThat(settings.clientAuth()).isEqualTo(ClientAuth.NONE);
  }

  @Test
  void from_certWithoutKey_errorNamesBoth() {
    assertThatThrownBy(() -> TlsSettings.from(new EnvReader(Map.of("WEIR_TLS_CERT", "/c.pem"))))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("WEIR_TLS_CERT and WEIR_TLS_KEY must be set together");
  }

  @Test
  void from_requireWithoutCa_errorNamesCa() {
    assertThatThrownBy(
            () ->
                TlsSettings.from(
                    new EnvReader(
                        Map.of(
                            "WEIR_TLS_CERT", "/c.pem",
                            "WEIR_TLS_KEY", "/k.pem",
                            "WEIR_TLS_CLIENT_AUTH", "require-and-verify"))))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("needs WEIR_TLS_CA");
  }

  @Test
  void from_caWithoutCertificateOrAuto_refusedRatherThanServingPlaintext() {
    assertThatThrownBy(
            () ->
                TlsSettings.from(
                    new EnvReader(
                        Map.of(
                            "WEIR_TLS_CA", "/ca.pem",
                            "WEIR_TLS_CLIENT_AUTH", "require-and-verify"))))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_TLS_CA is set but TLS is off: set WEIR_TLS_CERT and WEIR_TLS_KEY, or"
                + " WEIR_TLS_AUTO=true, to turn it on");
  }

  @Test
  void from_clientAuthWithoutTls_refusedNamingTheAliasSet() {
    assertThatThrownBy(
            () ->
                TlsSettings.from(
                    new EnvReader(Map.of("GUBER_TLS_CLIENT_AUTH", "request-cert"))))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("GUBER_TLS_CLIENT_AUTH=request-cert is set but TLS is off");
  }

  @Test
  void from_requireWithCertificateAndAutoButNoCa_refusedBecauseAutoMakesNoCaThen() {
    assertThatThrownBy(
            () ->
                TlsSettings.from(
                    new EnvReader(
                        Map.of(
                            "WEIR_TLS_CERT", "/c.pem",
                            "WEIR_TLS_KEY", "/k.pem",
                            "WEIR_TLS_AUTO", "true",
                            "WEIR_TLS_CLIENT_AUTH", "require-and-verify"))))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("needs WEIR_TLS_CA")
        .hasMessageContaining("WEIR_TLS_AUTO generates one only without WEIR_TLS_CERT");
  }

  @Test
  void from_requireWithAutoAndNoCa_refusedBecauseNoClientCouldHoldACertificateOfTheGeneratedCa() {
    assertThatThrownBy(
            () ->
                TlsSettings.from(
                    new EnvReader(
                        Map.of(
                            "GUBER_TLS_AUTO", "true",
                            "WEIR_TLS_CLIENT_AUTH", "require-and-verify"))))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_TLS_CLIENT_AUTH=require-and-verify with GUBER_TLS_AUTO=true and no WEIR_TLS_CA"
                + " admits no client: the CA that GUBER_TLS_AUTO generates never leaves the node,"
                + " so no client holds a certificate it signs; set WEIR_TLS_CA to the CA your"
                + " clients' certificates chain to, or WEIR_TLS_CLIENT_AUTH to request or none");
  }

  @Test
  void from_requireAnyCertWithAutoAndNoCa_refusedSayingWeirVerifiesIt() {
    assertThatThrownBy(
            () ->
                TlsSettings.from(
                    new EnvReader(
                        Map.of(
                            "GUBER_TLS_AUTO", "true",
                            "GUBER_TLS_CLIENT_AUTH", "require-any-cert"))))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith(
            "GUBER_TLS_CLIENT_AUTH=require-any-cert (Weir verifies it as require-and-verify)"
                + " with GUBER_TLS_AUTO=true and no WEIR_TLS_CA admits no client");
  }

  @Test
  void from_requireAnyCertWithCertAndNoCa_refusedSayingWeirVerifiesIt() {
    assertThatThrownBy(
            () ->
                TlsSettings.from(
                    new EnvReader(
                        Map.of(
                            "WEIR_TLS_CERT", "/c.pem",
                            "WEIR_TLS_KEY", "/k.pem",
                            "GUBER_TLS_CLIENT_AUTH", "require-any-cert"))))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith(
            "GUBER_TLS_CLIENT_AUTH=require-any-cert (Weir verifies it as require-and-verify)"
                + " needs WEIR_TLS_CA");
  }

  @Test
  void from_requireWithAutoAndCa_acceptedVerifyingClientsAgainstThatCa() {
    TlsSettings settings =
        TlsSettings.from(
            new EnvReader(
                Map.of(
                    "WEIR_TLS_AUTO", "true",
                    "WEIR_TLS_CA", "/ca.pem",
                    "WEIR_TLS_CLIENT_AUTH", "require-and-verify")));

    assertThat(settings.enabled()).isTrue();
    assertThat(settings.clientAuth()).isEqualTo(ClientAuth.REQUIRE_AND_VERIFY);
    assertThat(settings.ca()).contains(Path.of("/ca.pem"));
  }

  @Test
  void from_aliasCertWithoutKey_errorNamesTheAliases() {
    assertThatThrownBy(() -> TlsSettings.from(new EnvReader(Map.of("GUBER_TLS_CERT", "/c.pem"))))
        .isInstanceOf(ConfigException.class)
        .hasMessage("GUBER_TLS_CERT and WEIR_TLS_KEY must be set together: only GUBER_TLS_CERT is set");
  }

  @Test
  void from_badMinVersion_errorListsChoices() {
    assertThatThrownBy(
            () -> TlsSettings.from(new EnvReader(Map.of("WEIR_TLS_MIN_VERSION", "1.1"))))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("WEIR_TLS_MIN_VERSION")
        .hasMessageContaining("1.2, 1.3");
  }
}
