package dev.weir.core.discovery;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class DiscoveryEnvTest {

  @ParameterizedTest
  @CsvSource({"500us,0.0005", "100ms,0.1", "5s,5", "1m30s,90", "1h,3600", "1.5s,1.5"})
  void duration_goStyle_parsed(String text, double seconds) {
    Duration d = new DiscoveryEnv(Map.of("WEIR_X", text)).duration("X", Duration.ZERO);

    assertThat(d.toNanos()).isEqualTo((long) (seconds * 1e9));
  }

  @Test
  void duration_badOrZero_rejectedNamingVariable() {
    assertThatThrownBy(() -> new DiscoveryEnv(Map.of("WEIR_X", "5 s")).duration("X", Duration.ZERO))
        .hasMessage("WEIR_X='5 s' is invalid: expected a positive duration such as 500ms, 5s or 1m30s");
    assertThatThrownBy(() -> new DiscoveryEnv(Map.of("GUBER_X", "0s")).duration("X", Duration.ZERO))
        .hasMessageStartingWith("GUBER_X='0s'");
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
  void port_outOfRange_rejected() {
    assertThatThrownBy(() -> new DiscoveryEnv(Map.of("WEIR_P", "70000")).port("P", 1))
        .hasMessage("WEIR_P='70000' is invalid: expected a port number from 1 to 65535");
  }

  @Test
  void oneOf_unknown_listsAllowed() {
    assertThatThrownBy(() -> new DiscoveryEnv(Map.of("WEIR_T", "Gossip")).oneOf("T", "a", List.of("a", "b")))
        .hasMessage("WEIR_T='gossip' is invalid: expected one of a, b");
  }
}
