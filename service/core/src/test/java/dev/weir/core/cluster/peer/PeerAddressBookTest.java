package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.discovery.StaticDiscovery;
import java.util.List;
import org.junit.jupiter.api.Test;

class PeerAddressBookTest {

  private final StaticDiscovery discovery =
      new StaticDiscovery(
          "10.0.0.1:1051", List.of("10.0.0.1:1051", "10.0.0.2:1051@9000", "[fd00::3]:1051"));

  @Test
  void sharedPort_membersWithoutAPeerPortOfTheirOwn_theirHostAtTheSharedPort() {
    PeerAddressBook book = PeerAddressBook.sharedPort(discovery, 1052);

    assertThat(book.peerAddress("10.0.0.1:1051")).isEqualTo("10.0.0.1:1052");
    assertThat(book.peerAddress("10.0.0.2:1051")).isEqualTo("10.0.0.2:9000");
    assertThat(book.peerAddress("[fd00::3]:1051")).isEqualTo("[fd00::3]:1052");
  }

  @Test
  void sameAddress_membersWithoutAPeerPortOfTheirOwn_calledOnTheirAddress() {
    PeerAddressBook book = PeerAddressBook.sameAddress(discovery);

    assertThat(book.peerAddress("10.0.0.1:1051")).isEqualTo("10.0.0.1:1051");
    assertThat(book.peerAddress("10.0.0.2:1051")).isEqualTo("10.0.0.2:9000");
  }

  @Test
  void sharedPort_outOfRange_fails() {
    assertThatThrownBy(() -> PeerAddressBook.sharedPort(discovery, 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("got 0");
  }
}
