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
  void from_badMinVersion_errorListsChoices() {
    assertThatThrownBy(
            () -> TlsSettings.from(new EnvReader(Map.of("WEIR_TLS_MIN_VERSION", "1.1"))))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("WEIR_TLS_MIN_VERSION")
        .hasMessageContaining("1.2, 1.3");
  }
}
