package dev.weir.core.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import java.util.List;
import org.junit.jupiter.api.Test;

class RingKeysTest {

  private static final HashRing RING =
      HashRing.of(List.of("10.0.0.1:1051", "10.0.0.2:1051", "10.0.0.3:1051"), 512, PeerHash.FNV1A);

  @Test
  void split_givesTheAskedNumberOwnedByThePeerAndByOthers() {
    List<String> keys = RingKeys.split(RING, "n", "key-", "10.0.0.2:1051", 7, 11);

    assertThat(keys).hasSize(18).doesNotHaveDuplicates().allMatch(k -> k.startsWith("key-"));
    assertThat(keys)
        .filteredOn(k -> RING.ownerOf("n_" + k).equals("10.0.0.2:1051"))
        .hasSize(7);
  }

  @Test
  void split_ownerNotOnTheRing_failsNamingWhatItFound() {
    assertThatThrownBy(() -> RingKeys.split(RING, "n", "key-", "10.0.0.9:1051", 1, 0))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage(
            "100000 keys gave 0 of 1 owned by 10.0.0.9:1051 and 0 of 0 owned by other peers of "
                + "[10.0.0.1:1051, 10.0.0.2:1051, 10.0.0.3:1051]");
  }
}
