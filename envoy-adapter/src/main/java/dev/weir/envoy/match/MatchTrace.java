package dev.weir.envoy.match;

import dev.weir.envoy.config.DescriptorNode;
import java.util.List;
import java.util.Optional;

/**
 * How far a descriptor's entries got through the rules, for {@code explain}: the levels that
 * matched, and either the match or where and why matching stopped, with the rules that were
 * candidates there.
 *
 * @param matched the entries that matched a rule, outermost first
 * @param match the match, empty when no limit applies
 * @param stoppedAt the index of the entry where matching stopped; -1 when it did not stop early
 * @param reason why no limit applies; empty with a match
 * @param candidates the rules of the level where matching stopped, in config order
 */
public record MatchTrace(
    List<MatchedLevel> matched,
    Optional<Match> match,
    int stoppedAt,
    String reason,
    List<DescriptorNode> candidates) {

  /** Creates a trace, copying the lists. */
  public MatchTrace {
    matched = List.copyOf(matched);
    candidates = List.copyOf(candidates);
  }
}
