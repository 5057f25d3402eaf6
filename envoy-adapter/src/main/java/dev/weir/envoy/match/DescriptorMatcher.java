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
    return Optional.ofNullable(matchOrNull(root, entries));
  }

  /** Returns the match of {@code entries} under {@code root}, or null when no limit applies. */
  public static Match matchOrNull(DescriptorLevel root, List<Entry> entries) {
    int n = entries.size();
    if (n == 0) {
      return null;
    }
    MatchedLevel[] levels = new MatchedLevel[n];
    DescriptorLevel level = root;
    for (int i = 0; i < n; i++) {
      MatchedLevel matched = matchOne(level, entries.get(i));
      if (matched == null) {
        return null;
      }
      levels[i] = matched;
      DescriptorNode node = matched.node();
      if (i == n - 1) {
        return node.hasLimit() ? new Match(List.of(levels)) : null;
      }
      level = node.children();
      if (level.isEmpty()) {
        return null;
      }
    }
    return null;
  }

  /**
   * Returns how {@code entries} went through the rules under {@code root}: the same walk as {@link
   * #match}, telling where and why it stopped when no limit applies.
   */
  public static MatchTrace trace(DescriptorLevel root, List<Entry> entries) {
    List<MatchedLevel> matched = new ArrayList<>();
    if (entries.isEmpty()) {
      return new MatchTrace(matched, Optional.empty(), 0, "the descriptor has no entries", List.of());
    }
    DescriptorLevel level = root;
    for (int i = 0; i < entries.size(); i++) {
      MatchedLevel one = matchOne(level, entries.get(i));
      if (one == null) {
        return new MatchTrace(
            matched,
            Optional.empty(),
            i,
            "no rule at this level matches " + entries.get(i).key() + "=" + entries.get(i).value(),
            level.nodes());
      }
      matched.add(one);
      DescriptorNode node = one.node();
      if (i == entries.size() - 1) {
        if (node.hasLimit()) {
          return new MatchTrace(matched, Optional.of(new Match(matched)), -1, "", List.of());
        }
        return new MatchTrace(
            matched,
            Optional.empty(),
            -1,
            "the rule matched by the last entry has no rate_limit"
                + (node.children().isEmpty() ? " (a whitelist)" : " (only nested rules do)"),
            node.children().nodes());
      }
      level = node.children();
      if (level.isEmpty()) {
        return new MatchTrace(
            matched,
            Optional.empty(),
            i + 1,
            "the request has more entries than the rules have levels",
            List.of());
      }
    }
    throw new IllegalStateException("unreachable");
  }

  private static MatchedLevel matchOne(DescriptorLevel level, Entry entry) {
    if (!entry.value().isEmpty()) {
      DescriptorNode exact = level.exactOrNull(entry.key(), entry.value());
      if (exact != null) {
        return new MatchedLevel(entry, exact, MatchKind.EXACT);
      }
    }
    List<DescriptorNode> wildcards = level.wildcards();
    for (int i = 0; i < wildcards.size(); i++) {
      DescriptorNode wildcard = wildcards.get(i);
      if (wildcard.key().equals(entry.key()) && Wildcard.matches(wildcard.value(), entry.value())) {
        return new MatchedLevel(entry, wildcard, MatchKind.WILDCARD);
      }
    }
    DescriptorNode keyOnly = level.exactOrNull(entry.key(), "");
    return keyOnly == null ? null : new MatchedLevel(entry, keyOnly, MatchKind.KEY_ONLY);
  }
}
