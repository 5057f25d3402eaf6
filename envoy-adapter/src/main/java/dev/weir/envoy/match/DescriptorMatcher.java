package dev.weir.envoy.match;

import dev.weir.envoy.config.DescriptorLevel;
import dev.weir.envoy.config.DescriptorNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Finds the rule a request descriptor matches, as envoyproxy/ratelimit does: level by level, the
 * exact {@code key}+{@code value} rule, else the first wildcard rule of that key in config order
 * whose pattern matches the value, else the key-only rule; a limit applies only when the rule
 * matched by the last entry has one, and a level that matched is never revisited (no backtracking).
 *
 * <p>Unlike envoyproxy/ratelimit, a wildcard rule only matches entries of its own key (there the
 * pattern is matched against {@code key_value}, so key {@code a_b} could match key {@code a}'s
 * pattern {@code b*}).
 */
public final class DescriptorMatcher {

  private DescriptorMatcher() {}

  /** Returns the match of {@code entries} under {@code root}, or empty when no limit applies. */
  public static Optional<Match> match(DescriptorLevel root, List<Entry> entries) {
    if (entries.isEmpty()) {
      return Optional.empty();
    }
    List<MatchedLevel> levels = new ArrayList<>(entries.size());
    DescriptorLevel level = root;
    for (int i = 0; i < entries.size(); i++) {
      Entry entry = entries.get(i);
      Optional<MatchedLevel> matched = matchOne(level, entry);
      if (matched.isEmpty()) {
        return Optional.empty();
      }
      levels.add(matched.get());
      DescriptorNode node = matched.get().node();
      if (i == entries.size() - 1) {
        return node.rule().isPresent() ? Optional.of(new Match(levels)) : Optional.empty();
      }
      level = node.children();
      if (level.isEmpty()) {
        return Optional.empty();
      }
    }
    return Optional.empty();
  }

  private static Optional<MatchedLevel> matchOne(DescriptorLevel level, Entry entry) {
    if (!entry.value().isEmpty()) {
      Optional<DescriptorNode> exact = level.exact(entry.key(), entry.value());
      if (exact.isPresent()) {
        return Optional.of(new MatchedLevel(entry, exact.get(), MatchKind.EXACT));
      }
    }
    for (DescriptorNode wildcard : level.wildcards()) {
      if (wildcard.key().equals(entry.key()) && Wildcard.matches(wildcard.value(), entry.value())) {
        return Optional.of(new MatchedLevel(entry, wildcard, MatchKind.WILDCARD));
      }
    }
    return level
        .exact(entry.key(), "")
        .map(node -> new MatchedLevel(entry, node, MatchKind.KEY_ONLY));
  }
}
