package dev.weir.core.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import java.util.Map;
import org.junit.jupiter.api.Test;

class HttpSettingsTest {

  @Test
  void from_unset_defaultsWithQueuePerThread() {
    HttpSettings settings = HttpSettings.from(new EnvReader(Map.of()));

    assertThat(settings).isEqualTo(HttpSettings.defaults());
    assertThat(settings.threads()).isGreaterThanOrEqualTo(8);
    assertThat(settings.maxQueue()).isEqualTo(settings.threads() * HttpSettings.QUEUE_PER_THREAD);
  }

  @Test
  void from_threadsOnly_queueFollowsThreads() {
    assertThat(HttpSettings.from(new EnvReader(Map.of("WEIR_HTTP_THREADS", "3"))))
        .isEqualTo(new HttpSettings(3, 96));
  }

  @Test
  void from_both_readsEach() {
    assertThat(
            HttpSettings.from(
                new EnvReader(Map.of("WEIR_HTTP_THREADS", "16", "WEIR_HTTP_MAX_QUEUE", "1"))))
        .isEqualTo(new HttpSettings(16, 1));
  }

  @Test
  void from_zeroQueue_errorNamesVariableValueAndRange() {
    assertThatThrownBy(() -> HttpSettings.from(new EnvReader(Map.of("WEIR_HTTP_MAX_QUEUE", "0"))))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_HTTP_MAX_QUEUE='0' is not valid: expected a whole number from 1 to 1000000");
  }

  @Test
  void constructor_zeroQueue_rejectedWithRange() {
    assertThatThrownBy(() -> new HttpSettings(4, 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxQueue is 0; it must be from 1 to 1000000");
  }

  @Test
  void from_zeroThreads_errorNamesVariableAndRange() {
    assertThatThrownBy(() -> HttpSettings.from(new EnvReader(Map.of("WEIR_HTTP_THREADS", "0"))))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("WEIR_HTTP_THREADS")
        .hasMessageContaining("1 to 1024");
  }
}
