package dev.weir.envoy.match;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class WildcardTest {

  @ParameterizedTest(name = "''{0}'' vs ''{1}'' -> {2}")
  @CsvSource(
      delimiter = '|',
      value = {
        "a*    | a      | true",
        "a*    | ''     | false",
        "*     | ''     | true",
        "**    | q      | true",
        "a*b*c | aXbYc  | true",
        "a*b*c | aXbY   | false",
        "*x*y  | xy     | true",
        "*x*y  | axbyy  | true",
        "*x*y  | axbyz  | false",
        "abc   | abc    | true",
        "abc   | abd    | false",
        "abc   | abcd   | false",
        "a*a   | a      | false",
        "a*a   | aa     | true",
        "*.png | /x.png | true",
      })
  void matches_patternAndText_followsStarSemantics(String pattern, String text, boolean expected) {
    assertThat(Wildcard.matches(pattern, text)).isEqualTo(expected);
  }
}
