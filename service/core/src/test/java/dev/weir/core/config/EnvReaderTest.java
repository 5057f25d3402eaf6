package dev.weir.core.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class EnvReaderTest {

  private static final EnvVar VAR = EnvVar.of("WEIR_X", "GUBER_X");

  private static EnvReader env(String... keysAndValues) {
    Map<String, String> map = new java.util.HashMap<>();
    for (int i = 0; i < keysAndValues.length; i += 2) {
      map.put(keysAndValues[i], keysAndValues[i + 1]);
    }
    return new EnvReader(map);
  }

  @Test
  void string_unset_returnsDefault() {
    assertThat(env().string(VAR, "d")).isEqualTo("d");
  }

  @Test
  void string_onlyAliasSet_returnsAlias() {
    assertThat(env("GUBER_X", "g").string(VAR, "d")).isEqualTo("g");
  }

  @Test
  void string_bothSet_weirWins() {
    assertThat(env("GUBER_X", "g", "WEIR_X", "w").string(VAR, "d")).isEqualTo("w");
  }

  @Test
  void string_weirBlank_aliasUsed() {
    assertThat(env("GUBER_X", "g", "WEIR_X", "  ").string(VAR, "d")).isEqualTo("g");
  }

  @Test
  void string_valueWithSpaces_trimmed() {
    assertThat(env("WEIR_X", "  v ").string(VAR, "d")).isEqualTo("v");
  }

  @Test
  void lookup_aliasSet_namesAliasVariable() {
    assertThat(env("GUBER_X", "g").lookup(VAR)).contains(new EnvReader.Setting("GUBER_X", "g"));
  }

  @Test
  void intInRange_valid_returnsNumber() {
    assertThat(env("WEIR_X", "42").intInRange(VAR, 7, 1, 100)).isEqualTo(42);
    assertThat(env().intInRange(VAR, 7, 1, 100)).isEqualTo(7);
  }

  @ParameterizedTest
  @ValueSource(strings = {"abc", "1.5", "+", "0", "101", "99999999999999999999"})
  void intInRange_invalid_oneLineMessage(String value) {
    assertThatThrownBy(() -> env("WEIR_X", value).intInRange(VAR, 7, 1, 100))
        .isInstanceOf(ConfigException.class)
        .hasMessage("WEIR_X='" + value + "' is not valid: expected a whole number from 1 to 100");
  }

  @ParameterizedTest
  @ValueSource(strings = {"+5", "-0", "05"})
  void intInRange_goAtoiSyntax_accepted(String value) {
    assertThat(env("WEIR_X", value).intInRange(VAR, 7, 0, 100))
        .isEqualTo(Integer.parseInt(value));
  }

  @ParameterizedTest
  @ValueSource(strings = {"++5", "+-5", "-+5", "\uff15", "1\u0660", "\u0665"})
  void intInRange_notGoAtoiSyntax_refusedNamingTheForm(String value) {
    assertThatThrownBy(() -> env("WEIR_X", value).intInRange(VAR, 7, 0, 100))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_X='"
                + value
                + "' is not valid: expected a whole number from 0 to 100 (ASCII digits 0-9,"
                + " with at most one leading + or -)");
  }

  @Test
  void longInRange_fullWidthDigits_refused() {
    assertThatThrownBy(() -> env("GUBER_X", "\uff11\uff10").longInRange(VAR, 0, 0, 100))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("GUBER_X='\uff11\uff10' is not valid");
  }

  @Test
  void intInRange_invalidAlias_namesAlias() {
    assertThatThrownBy(() -> env("GUBER_X", "abc").intInRange(VAR, 7, 1, 2147483647))
        .hasMessage("GUBER_X='abc' is not valid: expected a whole number from 1 to 2147483647");
  }

  @Test
  void longInRange_large_returnsNumber() {
    assertThat(env("WEIR_X", "9223372036854775807").longInRange(VAR, 0, 0, Long.MAX_VALUE))
        .isEqualTo(Long.MAX_VALUE);
  }

  @Test
  void longInRange_belowMin_oneLineMessage() {
    assertThatThrownBy(() -> env("WEIR_X", "-1").longInRange(VAR, 0, 0, 10))
        .hasMessage("WEIR_X='-1' is not valid: expected a whole number from 0 to 10");
  }

  @ParameterizedTest
  @ValueSource(strings = {"true", "TRUE", "True", "t", "T", "1"})
  void bool_trueWords_true(String value) {
    assertThat(env("WEIR_X", value).bool(VAR, false)).isTrue();
  }

  @ParameterizedTest
  @ValueSource(strings = {"false", "FALSE", "f", "0"})
  void bool_falseWords_false(String value) {
    assertThat(env("WEIR_X", value).bool(VAR, true)).isFalse();
  }

  @Test
  void bool_invalid_oneLineMessage() {
    assertThatThrownBy(() -> env("WEIR_X", "yes").bool(VAR, true))
        .hasMessage("WEIR_X='yes' is not valid: expected true or false (also t/f or 1/0)");
  }

  @Test
  void hostPort_valid_parsed() {
    assertThat(env("WEIR_X", "0.0.0.0:9").hostPort(VAR, null))
        .isEqualTo(new HostPort("0.0.0.0", 9));
  }

  @Test
  void hostPort_invalid_oneLineMessage() {
    assertThatThrownBy(() -> env("WEIR_X", "localhost").hostPort(VAR, null))
        .hasMessage(
            "WEIR_X='localhost' is not valid: expected host:port with a port from 0 to 65535,"
                + " e.g. localhost:1051 or [::1]:1051 (missing ':port')");
  }

  @Test
  void hostPort_twoAddressesOrAScheme_refusedNamingTheProblem() {
    assertThatThrownBy(() -> env("WEIR_X", "a;b:1051").hostPort(VAR, null))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_X='a;b:1051' is not valid: expected host:port with a port from 0 to 65535,"
                + " e.g. localhost:1051 or [::1]:1051 (it holds ';'; one address has no spaces,"
                + " commas or semicolons)");
    assertThatThrownBy(() -> env("WEIR_X", "http://node-1:1051").hostPort(VAR, null))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("WEIR_X='http://node-1:1051'")
        .hasMessageContaining("without a scheme such as 'http://'");
  }

  @Test
  void duration_valid_parsed() {
    assertThat(
            env("WEIR_X", "500us").duration(VAR, Duration.ZERO, Duration.ZERO, Duration.ofHours(1)))
        .isEqualTo(Duration.ofNanos(500_000));
    assertThat(env().duration(VAR, Duration.ofSeconds(5), Duration.ZERO, Duration.ofHours(1)))
        .isEqualTo(Duration.ofSeconds(5));
  }

  @ParameterizedTest
  @ValueSource(strings = {"5", "5 sec", "2h", "-1s"})
  void duration_invalidOrOutOfRange_oneLineMessage(String value) {
    assertThatThrownBy(
            () ->
                env("WEIR_X", value)
                    .duration(VAR, Duration.ZERO, Duration.ZERO, Duration.ofHours(1)))
        .hasMessage(
            "WEIR_X='"
                + value
                + "' is not valid: expected a duration from 0s to 1h such as 500us, 100ms, 5s or"
                + " 1h30m (units ns, us, \u00b5s, ms, s, m, h)");
  }

  @Test
  void duration_nonAsciiDigit_messageSaysDigitsAreAsciiOnly() {
    assertThatThrownBy(
            () ->
                env("WEIR_X", "1\uff15s")
                    .duration(VAR, Duration.ZERO, Duration.ZERO, Duration.ofHours(1)))
        .hasMessageEndingWith("(units ns, us, \u00b5s, ms, s, m, h; digits ASCII 0-9 only)");
  }

  @Test
  void oneOf_anyCase_returnsListedSpelling() {
    assertThat(env("WEIR_X", "DEBUG").oneOf(VAR, "info", List.of("debug", "info")))
        .isEqualTo("debug");
  }

  @Test
  void oneOf_invalid_oneLineMessage() {
    assertThatThrownBy(() -> env("WEIR_X", "loud").oneOf(VAR, "info", List.of("debug", "info")))
        .hasMessage("WEIR_X='loud' is not valid: expected one of debug, info");
  }

  @Test
  void invalidValue_withNewline_messageStaysOneLine() {
    assertThatThrownBy(() -> env("WEIR_X", "a\nb").intInRange(VAR, 1, 1, 2))
        .hasMessage("WEIR_X='a\\nb' is not valid: expected a whole number from 1 to 2");
  }

  @Test
  void path_setOrAliasOrUnset() {
    EnvVar var = EnvVar.of("WEIR_FILE", "GUBER_FILE");

    assertThat(new EnvReader(Map.of("GUBER_FILE", "/etc/a.pem")).path(var))
        .contains(Path.of("/etc/a.pem"));
    assertThat(new EnvReader(Map.of("WEIR_FILE", " ")).path(var)).isEmpty();
  }

  @Test
  void ratio_withinZeroAndOne_orFallback() {
    EnvVar var = EnvVar.of("WEIR_RATIO");

    assertThat(new EnvReader(Map.of("WEIR_RATIO", "0.25")).ratio(var, 0.8)).isEqualTo(0.25);
    assertThat(new EnvReader(Map.of("WEIR_RATIO", "1")).ratio(var, 0.8)).isEqualTo(1.0);
    assertThat(new EnvReader(Map.of()).ratio(var, 0.8)).isEqualTo(0.8);
  }

  @ParameterizedTest
  @ValueSource(strings = {"1.5", "-0.1", "NaN", "half"})
  void ratio_outsideZeroAndOne_namesVariableValueAndRange(String value) {
    EnvReader reader = new EnvReader(Map.of("WEIR_RATIO", value));

    assertThatThrownBy(() -> reader.ratio(EnvVar.of("WEIR_RATIO"), 0.5))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_RATIO='" + value + "' is not valid: expected a number from 0 to 1, such as 0.5");
  }
}
