package dev.weir.core.cluster;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;

/**
 * The peer-listener address discovery reported for each member at the last peer set, kept to tell
 * which members listen for peers somewhere else now: a member that came back under its advertised
 * address with another peer port (an etcd registration with a new {@code peer_address}), whose
 * client must then be made again.
 */
final class PeerAddressChanges {

  private final Map<String, Optional<String>> reported = new HashMap<>();

  /**
   * Records the address {@code reporter} gives for each of {@code members} and returns the members
   * whose address differs from the one recorded at the previous set; a member new to the set has
   * not moved.
   */
  synchronized List<String> update(
      Set<String> members, Function<String, Optional<String>> reporter) {
    List<String> moved = new ArrayList<>();
    Map<String, Optional<String>> now = new HashMap<>();
    for (String member : members) {
      Optional<String> address = reporter.apply(member);
      now.put(member, address);
      Optional<String> before = reported.get(member);
      if (before != null && !before.equals(address)) {
        moved.add(member);
      }
    }
    reported.clear();
    reported.putAll(now);
    return moved;
  }
}
