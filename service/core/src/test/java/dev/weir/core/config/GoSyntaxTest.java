package dev.weir.core.config;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class GoSyntaxTest {

  @ParameterizedTest
  @ValueSource(strings = {"0", "1051", "+80", "-1", "007", "99999999999999999999"})
  void isAtoi_signAndAsciiDigits_true(String text) {
    assertThat(GoSyntax.isAtoi(text)).isTrue();
  }

  @ParameterizedTest
  @ValueSource(
      strings = {"", "+", "-", "++1", "+-1", "1-", "1.0", " 1", "\uff15", "1\u0660", "0x1f"})
  void isAtoi_anythingElse_false(String text) {
    assertThat(GoSyntax.isAtoi(text)).isFalse();
  }

  @ParameterizedTest
  @ValueSource(chars = {'/', ':', 'a', '\uff10', '\u0660'})
  void isAsciiDigit_notZeroToNine_false(char c) {
    assertThat(GoSyntax.isAsciiDigit(c)).isFalse();
  }
}
