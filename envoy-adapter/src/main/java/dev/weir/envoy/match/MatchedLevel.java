package dev.weir.envoy.match;

import dev.weir.envoy.config.DescriptorNode;

/**
 * The rule one request entry matched.
 *
 * @param entry the request entry
 * @param node the rule it matched
 * @param kind how it matched
 */
public record MatchedLevel(Entry entry, DescriptorNode node, MatchKind kind) {}
