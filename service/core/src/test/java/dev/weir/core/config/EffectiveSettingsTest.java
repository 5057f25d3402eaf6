package dev.weir.core.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class EffectiveSettingsTest {

  @Test
  void describe_weirAndGuberVariables_sortedOthersLeftOut() {
    String line =
        EffectiveSettings.describe(
            Map.of("WEIR_CACHE_SIZE", "10", "GUBER_GRPC_ADDRESS", "0.0.0.0:81", "HOME", "/root"));

    assertThat(line).isEqualTo("GUBER_GRPC_ADDRESS=0.0.0.0:81 WEIR_CACHE_SIZE=10");
  }

  @Test
  void describe_secrets_masked() {
    String line =
        EffectiveSettings.describe(
            Map.of(
                "WEIR_ETCD_PASSWORD", "hunter2",
                "GUBER_TLS_KEY", "/etc/tls/key.pem",
                "GUBER_TLS_CA_KEY", "/etc/tls/ca.key",
                "WEIR_API_TOKEN", "t0k3n",
                "WEIR_TLS_CERT", "/etc/tls/cert.pem"));

    assertThat(line)
        .doesNotContain("hunter2", "key.pem", "ca.key", "t0k3n")
        .contains("WEIR_ETCD_PASSWORD=****", "GUBER_TLS_KEY=****", "WEIR_TLS_CERT=/etc/tls/cert.pem");
  }

  @Test
  void describe_headersSentToAServer_maskedButHeaderSwitchesShown() {
    String line =
        EffectiveSettings.describe(
            Map.of(
                "WEIR_ENVOY_XDS_CLIENT_ADDITIONAL_HEADERS", "authorization:Bearer t0k3n",
                "WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_ENABLED", "true"));

    assertThat(line)
        .isEqualTo(
            "WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_ENABLED=true"
                + " WEIR_ENVOY_XDS_CLIENT_ADDITIONAL_HEADERS=****");
  }

  @Test
  void describe_blankAndMultiLineValues_blankDroppedNewlinesEscaped() {
    assertThat(EffectiveSettings.describe(Map.of("WEIR_A", " ", "WEIR_B", "x\ny")))
        .isEqualTo("WEIR_B=x\\ny");
  }

  @Test
  void describe_keyInTheMiddleOfTheName_shown() {
    String line =
        EffectiveSettings.describe(
            Map.of(
                "WEIR_ETCD_KEY_PREFIX", "/weir-peers/",
                "WEIR_MAX_KEY_LENGTH", "2048",
                "WEIR_ENVOY_STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "true"));

    assertThat(line)
        .isEqualTo(
            "WEIR_ENVOY_STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true"
                + " WEIR_ETCD_KEY_PREFIX=/weir-peers/ WEIR_MAX_KEY_LENGTH=2048");
  }

  @Test
  void describe_unknownVariableClosestToASecret_masked() {
    UnknownVariables check =
        new UnknownVariables(
            List.of(EnvVar.of("WEIR_ETCD_PASSWORD", "GUBER_ETCD_PASSWORD"), WeirConfig.CACHE_SIZE));

    String line =
        EffectiveSettings.describe(
            Map.of("WEIR_ETCD_PASWORD", "hunter2", "WEIR_CAHCE_SIZE", "10"), check);

    assertThat(line).isEqualTo("WEIR_CAHCE_SIZE=10 WEIR_ETCD_PASWORD=****");
  }
}
