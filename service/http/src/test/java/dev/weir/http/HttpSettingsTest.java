package dev.weir.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.limiter.InputLimits;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class HttpSettingsTest {

  private static HttpSettings from(Map<String, String> env) {
    return HttpSettings.from(new EnvReader(env), InputLimits.DEFAULTS);
  }

  @Test
  void from_unset_defaults() {
    HttpSettings settings = from(Map.of());

    assertThat(settings).isEqualTo(HttpSettings.defaults());
    assertThat(settings.threads()).isEqualTo(2 * Runtime.getRuntime().availableProcessors());
    assertThat(settings.maxInFlight()).isEqualTo(1024);
    assertThat(settings.maxConnections()).isEqualTo(10_000);
    assertThat(settings.maxBodyBytes()).isEqualTo(4 * 1024 * 1024);
    assertThat(settings.headerTimeout()).isEqualTo(Duration.ofSeconds(10));
    assertThat(settings.bodyTimeout()).isEqualTo(Duration.ofSeconds(30));
    assertThat(settings.idleTimeout()).isEqualTo(Duration.ofSeconds(60));
    assertThat(settings.writeTimeout()).isEqualTo(Duration.ofSeconds(10));
  }

  @Test
  void from_everySet_readsEach() {
    HttpSettings settings =
        from(
            Map.of(
                "WEIR_HTTP_THREADS", "3",
                "WEIR_HTTP_MAX_IN_FLIGHT", "7",
                "WEIR_HTTP_MAX_CONNECTIONS", "9",
                "WEIR_HTTP_HEADER_TIMEOUT", "2s",
                "WEIR_HTTP_BODY_TIMEOUT", "500ms",
                "WEIR_HTTP_IDLE_TIMEOUT", "1m",
                "WEIR_HTTP_WRITE_TIMEOUT", "3s"));

    assertThat(settings)
        .isEqualTo(
            new HttpSettings(
                3,
                7,
                9,
                4 * 1024 * 1024,
                Duration.ofSeconds(2),
                Duration.ofMillis(500),
                Duration.ofMinutes(1),
                Duration.ofSeconds(3)));
  }

  @Test
  void from_bodyLimit_takenFromInputLimits() {
    InputLimits limits = new InputLimits(1 << 20, 2048, 1024, 1024, 64, 1024);

    assertThat(HttpSettings.from(new EnvReader(Map.of()), limits).maxBodyBytes()).isEqualTo(2048);
  }

  @Test
  void from_formerQueueName_readAsMaxInFlight() {
    assertThat(from(Map.of("WEIR_HTTP_MAX_QUEUE", "40")).maxInFlight()).isEqualTo(40);
    assertThat(
            from(Map.of("WEIR_HTTP_MAX_QUEUE", "40", "WEIR_HTTP_MAX_IN_FLIGHT", "50"))
                .maxInFlight())
        .isEqualTo(50);
  }

  @Test
  void from_zeroFormerQueue_errorNamesVariableValueAndRange() {
    assertThatThrownBy(() -> from(Map.of("WEIR_HTTP_MAX_QUEUE", "0")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_HTTP_MAX_QUEUE='0' is not valid: expected a whole number from 1 to 1000000");
  }

  @Test
  void from_zeroConnections_errorNamesVariableValueAndRange() {
    assertThatThrownBy(() -> from(Map.of("WEIR_HTTP_MAX_CONNECTIONS", "0")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_HTTP_MAX_CONNECTIONS='0' is not valid: expected a whole number from 1 to"
                + " 1000000");
  }

  @Test
  void from_headerTimeoutTooShort_errorNamesVariableAndRange() {
    assertThatThrownBy(() -> from(Map.of("WEIR_HTTP_HEADER_TIMEOUT", "10ms")))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("WEIR_HTTP_HEADER_TIMEOUT='10ms' is not valid")
        .hasMessageContaining("from 100ms to 1h");
  }

  @Test
  void constructor_zeroInFlight_rejectedWithRange() {
    assertThatThrownBy(() -> HttpSettings.defaults().withMaxInFlight(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxInFlight is 0; it must be from 1 to 1000000");
  }

  @Test
  void from_zeroThreads_errorNamesVariableAndRange() {
    assertThatThrownBy(() -> from(Map.of("WEIR_HTTP_THREADS", "0")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("WEIR_HTTP_THREADS")
        .hasMessageContaining("1 to 1024");
  }
}
