package dev.weir.envoy.match;

import dev.weir.envoy.config.DescriptorNode;

/**
 * The rule one request entry matched.
 *
 * @param entry the request entry
 * @param node the rule it matched
 * @param kind how it matched
 */
public record MatchedLevel(Entry entry, DescriptorNode node, MatchKind kind) {

  /**
   * Returns whether the entry matched a wildcard with {@code share_threshold}, so that its counter
   * and its stats stand for the rule's pattern, not the entry's value.
   */
  public boolean sharesPattern() {
    return kind == MatchKind.WILDCARD && node.shareThreshold();
  }
}
