package dev.weir.envoy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.ConfigException;
import dev.weir.core.model.Algorithm;
import dev.weir.envoy.config.ConfigLimits;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class EnvoySettingsTest {

  @Test
  void fromEnvironment_nothingSet_referenceDefaults() {
    assertThat(EnvoySettings.fromEnvironment(Map.of()))
        .isEqualTo(
            new EnvoySettings(
                Optional.empty(),
                false,
                Algorithm.FIXED_WINDOW,
                false,
                false,
                "RateLimit-Limit",
                "RateLimit-Remaining",
                "RateLimit-Reset",
                false,
                0.8,
                Duration.ofSeconds(1),
                false,
                new ConfigLimits(1_048_576, 16_777_216)));
  }

  @Test
  void fromEnvironment_everyVariableSet_readsEach() {
    EnvoySettings settings =
        EnvoySettings.fromEnvironment(
            Map.ofEntries(
                Map.entry("WEIR_ENVOY_CONFIG", "/etc/weir/envoy"),
                Map.entry("WEIR_ENVOY_MERGE_DOMAIN_CONFIG", "true"),
                Map.entry("WEIR_ENVOY_DEFAULT_ALGORITHM", "Token_Bucket"),
                Map.entry("WEIR_ENVOY_SHADOW_MODE", "1"),
                Map.entry("WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_ENABLED", "t"),
                Map.entry("WEIR_ENVOY_LIMIT_LIMIT_HEADER", "X-RateLimit-Limit"),
                Map.entry("WEIR_ENVOY_LIMIT_REMAINING_HEADER", "X-RateLimit-Remaining"),
                Map.entry("WEIR_ENVOY_LIMIT_RESET_HEADER", "X-RateLimit-Reset"),
                Map.entry("WEIR_ENVOY_STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "TRUE"),
                Map.entry("WEIR_ENVOY_NEAR_LIMIT_RATIO", "0.5"),
                Map.entry("WEIR_ENVOY_CONFIG_RELOAD_INTERVAL", "250ms"),
                Map.entry("WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG", "true"),
                Map.entry("WEIR_ENVOY_CONFIG_MAX_FILE_SIZE", "65536"),
                Map.entry("WEIR_ENVOY_CONFIG_MAX_TOTAL_SIZE", "1048576")));

    assertThat(settings)
        .isEqualTo(
            new EnvoySettings(
                Optional.of(Path.of("/etc/weir/envoy")),
                true,
                Algorithm.TOKEN_BUCKET,
                true,
                true,
                "X-RateLimit-Limit",
                "X-RateLimit-Remaining",
                "X-RateLimit-Reset",
                true,
                0.5,
                Duration.ofMillis(250),
                true,
                new ConfigLimits(65_536, 1_048_576)));
  }

  @Test
  void fromEnvironment_badRatio_namesVariableValueAndAllowed() {
    assertThatThrownBy(
            () -> EnvoySettings.fromEnvironment(Map.of("WEIR_ENVOY_NEAR_LIMIT_RATIO", "1.5")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_ENVOY_NEAR_LIMIT_RATIO='1.5' is not valid: expected a number from 0 to 1, such as"
                + " 0.8");
  }

  @Test
  void fromEnvironment_badAlgorithm_namesTheAllowedValues() {
    assertThatThrownBy(
            () -> EnvoySettings.fromEnvironment(Map.of("WEIR_ENVOY_DEFAULT_ALGORITHM", "gcra")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("WEIR_ENVOY_DEFAULT_ALGORITHM='gcra'")
        .hasMessageContaining("fixed_window, token_bucket, leaky_bucket, sliding_window");
  }

  @Test
  void fromEnvironment_headerNameWithSpace_isRejected() {
    assertThatThrownBy(
            () ->
                EnvoySettings.fromEnvironment(
                    Map.of("WEIR_ENVOY_LIMIT_RESET_HEADER", "Rate Limit")))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("WEIR_ENVOY_LIMIT_RESET_HEADER='Rate Limit' is not valid");
  }

  @Test
  void fromEnvironment_configFileSizeOutOfRange_namesVariableValueAndRange() {
    assertThatThrownBy(
            () -> EnvoySettings.fromEnvironment(Map.of("WEIR_ENVOY_CONFIG_MAX_FILE_SIZE", "100")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_ENVOY_CONFIG_MAX_FILE_SIZE='100' is not valid: expected a whole number from 1024"
                + " to 16777216");
  }
}
