package dev.weir.core.json;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class LongNumbersTest {

  private static final String LONG = "1".repeat(LongNumbers.MAX_CHARS + 1);

  @Test
  void bareNumberOverTheLimit_refusedNamingWhereAndHowLong() {
    assertThat(LongNumbers.refusal("{\"hits\":" + LONG + "}"))
        .contains("the number at character 8 has 1001 characters; numbers have at most 1000");
  }

  @Test
  void numberWrittenAsAStringOverTheLimit_refused() {
    assertThat(LongNumbers.refusal("{\"hits\":\"" + LONG + "\"}")).isPresent();
    assertThat(LongNumbers.refusal("{\"hits\":\"0." + "0".repeat(2000) + "1\"}")).isPresent();
  }

  @Test
  void numbersAtTheLimit_longTextStrings_andEscapedStrings_accepted() {
    String atLimit = "1".repeat(LongNumbers.MAX_CHARS);
    assertThat(LongNumbers.refusal("{\"hits\":" + atLimit + ",\"k\":\"" + atLimit + "\"}"))
        .isEmpty();
    assertThat(LongNumbers.refusal("{\"uniqueKey\":\"user-" + LONG + "\"}")).isEmpty();
    assertThat(LongNumbers.refusal("{\"uniqueKey\":\"\\n" + LONG + "\"}")).isEmpty();
    assertThat(LongNumbers.refusal("[1,2,3,true,null,\"a\\\"b\"]")).isEmpty();
  }

  @Test
  void digitsWrittenAsUnicodeEscapes_countAsDigits() {
    assertThat(LongNumbers.refusal("{\"hits\":\"" + "\\u0031".repeat(1001) + "\"}")).isPresent();
  }

  @Test
  void numberEndingTheText_checked() {
    assertThat(LongNumbers.refusal(LONG)).isPresent();
  }
}
