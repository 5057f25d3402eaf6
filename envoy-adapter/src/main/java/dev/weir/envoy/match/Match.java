package dev.weir.envoy.match;

import dev.weir.envoy.config.DescriptorNode;
import dev.weir.envoy.config.RateLimitRule;
import java.util.List;

/**
 * A request descriptor matched to a rule with a limit: one matched level per request entry.
 *
 * @param levels the matched rules, outermost first; the last one carries the limit
 */
public record Match(List<MatchedLevel> levels) {

  /** Creates a match, copying {@code levels}, which must not be empty. */
  public Match {
    levels = List.copyOf(levels);
    if (levels.isEmpty()) {
      throw new IllegalArgumentException("a match has at least one level");
    }
  }

  /** Returns the rule the last entry matched. */
  public DescriptorNode node() {
    return levels.get(levels.size() - 1).node();
  }

  /** Returns the limit of the matched rule. */
  public RateLimitRule rule() {
    return node().rule().orElseThrow();
  }
}
