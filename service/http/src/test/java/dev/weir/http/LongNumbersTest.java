package dev.weir.http;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class LongNumbersTest {

  private static final String LONG = "1".repeat(LongNumbers.MAX_CHARS + 1);

  @Test
  void bareNumberOverTheLimit_refusedNamingWhereAndHowLong() {
    assertThat(LongNumbers.refusal("{\"requests\":[{\"hits\":" + LONG + "}]}"))
        .contains(
            "the number at $.requests[0].hits has 1001 characters; numbers have at most 1000");
  }

  @Test
  void numberWrittenAsAStringOrWithEscapes_overTheLimit_refused() {
    assertThat(LongNumbers.refusal("{\"hits\":\"" + LONG + "\"}")).isPresent();
    assertThat(LongNumbers.refusal("{\"hits\":\"0." + "0".repeat(2000) + "1\"}")).isPresent();
    assertThat(LongNumbers.refusal("{\"hits\":\"" + "\\u0031".repeat(1001) + "\"}")).isPresent();
  }

  @Test
  void stringOfUnicodeDigitsOverTheLimit_refusedAsBigDecimalReadsThemToo() {
    assertThat(LongNumbers.refusal("{\"hits\":\"" + "1".repeat(1000) + "\u0661\"}")).isPresent();
    assertThat(LongNumbers.refusal("{\"hits\":\"" + "\uff11".repeat(1001) + "\"}")).isPresent();
  }

  @Test
  void lenientSyntaxTheParserAccepts_readAsItReadsIt() {
    assertThat(LongNumbers.refusal("{/*\"*/\"hits\":" + LONG + "}")).isPresent();
    assertThat(LongNumbers.refusal("{'hits':'" + LONG + "'}")).isPresent();
    assertThat(LongNumbers.refusal("{hits:" + LONG + "}")).isPresent();
  }

  @Test
  void exponentBeyondTheLimit_refused_withinIt_accepted() {
    assertThat(LongNumbers.refusal("{\"hits_addend\":1e99999999}"))
        .contains(
            "the number at $.hits_addend has the exponent 99999999; numbers have exponents up to"
                + " 1000 either way");
    assertThat(LongNumbers.refusal("{\"hits\":\"1E-1001\"}")).isPresent();
    assertThat(LongNumbers.refusal("{\"hits\":1e3,\"limit\":2.5E+1000}")).isEmpty();
  }

  @Test
  void numbersAtTheLimit_longTextStrings_andMalformedJson_accepted() {
    String atLimit = "1".repeat(LongNumbers.MAX_CHARS);
    assertThat(LongNumbers.refusal("{\"hits\":" + atLimit + ",\"k\":\"" + atLimit + "\"}"))
        .isEmpty();
    assertThat(LongNumbers.refusal("{\"uniqueKey\":\"user-" + LONG + "\"}")).isEmpty();
    assertThat(LongNumbers.refusal("{\"uniqueKey\":\"\\n" + LONG + "\"}")).isEmpty();
    assertThat(LongNumbers.refusal("{\"requests\":[{\"name\":")).isEmpty();
  }

  @Test
  void manyValuesUnderALongName_readInOnePass() {
    String body = "{\"" + "n".repeat(1 << 20) + "\":[" + "1,".repeat(300_000) + "1]}";

    // Building each value's path copied the 1 MiB name 300 000 times (minutes of copying).
    var refusal =
        org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
            java.time.Duration.ofSeconds(30), () -> LongNumbers.refusal(body));

    assertThat(refusal).isEmpty();
  }
}
