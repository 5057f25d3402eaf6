package dev.weir.ring;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class HashRingSizeTest {

  private static List<String> members(int n) {
    return IntStream.range(0, n).mapToObj(i -> "10.1." + i + ":1051").toList();
  }

  @Test
  void checkPoints_moreArrayableThanBuildablePoints_isRefusedNamingMembersReplicasAndTheCap() {
    assertThatThrownBy(() -> HashRing.checkPoints(32_767, HashRing.MAX_REPLICAS))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "members (32767) times replicas (65536) is 2147418112 points; allowed: at most"
                + " 16777216");
  }

  @Test
  void checkPoints_oneMemberBeyondTheCap_isRefused_atTheCapAccepted() {
    assertThatThrownBy(() -> HashRing.checkPoints(257, HashRing.MAX_REPLICAS))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "members (257) times replicas (65536) is 16842752 points; allowed: at most 16777216");
    assertThatCode(() -> HashRing.checkPoints(256, HashRing.MAX_REPLICAS))
        .doesNotThrowAnyException();
  }

  @Test
  void of_morePointsThanAnArrayHolds_isRefusedBeforeAnyArrayIsMade() {
    assertThatThrownBy(() -> HashRing.of(members(32_768), HashRing.MAX_REPLICAS, PeerHash.FNV1A))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("members (32768) times replicas (65536)");
  }
}
