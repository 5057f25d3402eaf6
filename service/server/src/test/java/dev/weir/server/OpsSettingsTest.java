package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class OpsSettingsTest {

  @Test
  void from_gracefulTerminationDelayUnderBothNames_weirNameWinsAliasNotRead() {
    OpsSettings ops =
        OpsSettings.from(
            new EnvReader(
                Map.of(
                    "WEIR_GRACEFUL_TERMINATION_DELAY", "5s",
                    "GUBER_GRACEFUL_TERMINATION_DELAY_SEC", "5s")));

    assertThat(ops.gracefulTerminationDelay()).isEqualTo(Duration.ofSeconds(5));
  }

  @Test
  void from_gracefulTerminationDelayAliasAlone_wholeSeconds() {
    OpsSettings ops =
        OpsSettings.from(new EnvReader(Map.of("GUBER_GRACEFUL_TERMINATION_DELAY_SEC", "7")));

    assertThat(ops.gracefulTerminationDelay()).isEqualTo(Duration.ofSeconds(7));
    assertThatThrownBy(
            () ->
                OpsSettings.from(
                    new EnvReader(Map.of("GUBER_GRACEFUL_TERMINATION_DELAY_SEC", "5s"))))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("GUBER_GRACEFUL_TERMINATION_DELAY_SEC='5s' is not valid");
  }
}
