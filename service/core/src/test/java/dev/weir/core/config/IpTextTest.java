package dev.weir.core.config;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class IpTextTest {

  @ParameterizedTest
  @CsvSource({
    "10.0.0.2, 10.0.0.2",
    "FD00:0:0:0:0:0:0:2, fd00::2",
    "[fd00::2], fd00::2",
    "::ffff:1.2.3.4, 1.2.3.4"
  })
  void literal_ipLiterals_parsedAndSpelledAsPeersSpellThem(String text, String expected) {
    assertThat(IpText.literal(text)).map(IpText::of).contains(expected);
  }

  @ParameterizedTest
  @CsvSource({"$(POD_IP)", "weir-0.weir", "10.0.0", "10.0.0.256", "fd00::2%eth0", "localhost"})
  void literal_anythingElse_emptyWithoutAskingAResolver(String text) {
    assertThat(IpText.literal(text)).isEmpty();
  }
}
