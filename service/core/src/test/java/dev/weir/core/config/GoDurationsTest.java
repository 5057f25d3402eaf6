package dev.weir.core.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class GoDurationsTest {

  @ParameterizedTest
  @CsvSource({
    "0, 0",
    "500us, 500000",
    "500\u00b5s, 500000",
    "500\u03bcs, 500000",
    "250ns, 250",
    "100ms, 100000000",
    "5s, 5000000000",
    "1m, 60000000000",
    "1h30m, 5400000000000",
    "1.5s, 1500000000",
    ".5s, 500000000",
    "+2s, 2000000000",
    "-3ms, -3000000",
    "1h1m1s1ms1us1ns, 3661001001001",
  })
  void parse_goSyntax_returnsNanos(String text, long nanos) {
    assertThat(GoDurations.parse(text)).isEqualTo(Duration.ofNanos(nanos));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "", "5", "s", "5x", "5sec", "1.2.3s", "ms5", "-", "5 s", "1d", "++5s", "+-5s",
        "\uff15s", "1\u0660s", "\u0665ms", "1.\uff15s"
      })
  void parse_badSyntax_throws(String text) {
    assertThatThrownBy(() -> GoDurations.parse(text)).isInstanceOf(IllegalArgumentException.class);
  }

  @ParameterizedTest
  @ValueSource(strings = {"1\uff15s", "\uff15s", "1.\u0665s"})
  void parse_nonAsciiDigit_saysDigitsAreAsciiOnly(String text) {
    assertThatThrownBy(() -> GoDurations.parse(text))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("is not an ASCII digit; digits are ASCII 0-9 only");
  }

  @ParameterizedTest
  @CsvSource({"0, 0s", "500000, 500us", "100000000, 100ms", "5400000000000, 90m", "7, 7ns"})
  void format_exactUnits_largestUnit(long nanos, String text) {
    assertThat(GoDurations.format(Duration.ofNanos(nanos))).isEqualTo(text);
  }
}
