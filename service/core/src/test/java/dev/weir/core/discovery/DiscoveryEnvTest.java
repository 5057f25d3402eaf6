package dev.weir.core.discovery;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.ConfigException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DiscoveryEnvTest {

  @Test
  void duration_goStyleWithAlias_parsed() {
    assertThat(new DiscoveryEnv(Map.of("GUBER_X", "1m30s")).duration("X", Duration.ZERO, Duration.ofMillis(1)))
        .isEqualTo(Duration.ofSeconds(90));
  }

  @Test
  void duration_belowMinimum_configErrorNamingVariable() {
    assertThatThrownBy(() -> new DiscoveryEnv(Map.of("GUBER_X", "0s")).duration("X", Duration.ZERO, Duration.ofSeconds(1)))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("GUBER_X='0s' is not valid: expected a duration from 1s");
  }

  @Test
  void list_commaSeparated_trimsAndDropsBlanks() {
    assertThat(new DiscoveryEnv(Map.of("WEIR_X", " a , ,b ")).list("X", List.of())).containsExactly("a", "b");
  }

  @Test
  void raw_blankWeirValue_fallsBackToAlias() {
    assertThat(new DiscoveryEnv(Map.of("WEIR_X", " ", "GUBER_X", "g")).raw("X")).contains("g");
  }

  @Test
  void invalid_namesTheVariableThatWasSet() {
    assertThat(new DiscoveryEnv(Map.of("GUBER_X", "v")).invalid("X", "v", "w"))
        .hasMessage("GUBER_X='v' is not valid: expected w");
    assertThat(new DiscoveryEnv(Map.of()).invalid("X", "", "w")).hasMessage("WEIR_X='' is not valid: expected w");
  }
}
