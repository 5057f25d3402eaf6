package dev.weir.core.discovery;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class PeerAddressTest {

  @ParameterizedTest
  @CsvSource({
    "0:0:0:0:0:0:0:0, ::",
    "0:0:0:0:0:0:0:1, ::1",
    "fd00:0:0:0:0:0:0:5, fd00::5",
    "2001:db8:0:0:1:0:0:1, 2001:db8::1:0:0:1",
    "2001:db8:0:1:1:1:1:1, 2001:db8:0:1:1:1:1:1",
    "2001:0:0:1:0:0:0:1, 2001:0:0:1::1",
    "FE80:0:0:0:0:0:0:AB, fe80::ab",
    "1:0:0:0:0:0:0:0, 1::"
  })
  void of_ipv6_writesRfc5952Text(String literal, String expected) throws Exception {
    assertThat(PeerAddress.of(InetAddress.getByName(literal), 1051))
        .isEqualTo("[" + expected + "]:1051");
  }

  @Test
  void of_ipv4_writesDottedQuad() throws Exception {
    assertThat(PeerAddress.of(InetAddress.getByName("10.0.0.2"), 1051)).isEqualTo("10.0.0.2:1051");
  }
}
