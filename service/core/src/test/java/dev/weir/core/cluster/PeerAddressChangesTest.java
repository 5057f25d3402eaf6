package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PeerAddressChangesTest {

  private final PeerAddressChanges changes = new PeerAddressChanges();
  private final Map<String, String> reported = new HashMap<>();

  private Iterable<String> update(String... members) {
    return changes.update(Set.of(members), m -> Optional.ofNullable(reported.get(m)));
  }

  @Test
  void update_firstSetAndNewMembers_nothingMoved() {
    reported.put("b:1", "b:2");

    assertThat(update("a:1", "b:1")).isEmpty();
    reported.put("c:1", "c:2");
    assertThat(update("a:1", "b:1", "c:1")).isEmpty();
  }

  @Test
  void update_addressChangedGainedOrLost_thoseMembersMoved() {
    reported.put("b:1", "b:2");
    reported.put("c:1", "c:2");
    update("a:1", "b:1", "c:1", "d:1");

    reported.put("b:1", "b:3");
    reported.remove("c:1");
    reported.put("d:1", "d:2");

    assertThat(update("a:1", "b:1", "c:1", "d:1")).containsExactlyInAnyOrder("b:1", "c:1", "d:1");
    assertThat(update("a:1", "b:1", "c:1", "d:1")).as("recorded: no move the second time").isEmpty();
  }

  @Test
  void update_memberLeftAndCameBackElsewhere_notMoved() {
    reported.put("b:1", "b:2");
    update("a:1", "b:1");
    update("a:1");

    reported.put("b:1", "b:3");

    assertThat(update("a:1", "b:1")).as("a new member: its client was closed when it left").isEmpty();
  }
}
