package dev.weir.envoy.service;

import dev.weir.envoy.config.DescriptorNode;
import dev.weir.envoy.match.Entry;
import dev.weir.envoy.match.Match;
import dev.weir.envoy.match.MatchKind;
import dev.weir.envoy.match.MatchedLevel;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The rule label of a descriptor's metrics, as envoyproxy/ratelimit names its stats: per level
 * {@code key_value} for an exact match, {@code key_pattern} for a wildcard match and {@code key}
 * for a key-only match; actual values appear only where {@code value_to_metric} is set, or at every
 * level when the matched rule has {@code detailed_metric} ({@code key_} for an empty value), each
 * bounded like a counter key's (see {@link CounterKeys#bounded}), except at a wildcard level with
 * {@code share_threshold}, which keeps its pattern (and then a {@code detailed_metric} level writes
 * {@code key} for an empty value). A label without values is the rule's path, which the compiled
 * config holds. A limit override is labelled by its keys only, see {@link #override(List)}.
 */
public final class StatsKeys {

  /**
   * The longest rule label kept as written; a longer one (many levels of long keys or values, which
   * a caller can send) keeps its first characters and ends with {@code .} and the whole label's
   * digest, so that the labels of one domain, each kept in metrics and in the top-limited keys,
   * stay small.
   */
  public static final int MAX_LABEL_CHARS = 512;

  private StatsKeys() {}

  /** Returns the rule label of {@code match}, with values of any length verbatim. */
  public static String rule(Match match) {
    return rule(match, new CounterKeys(Integer.MAX_VALUE));
  }

  /** Returns the rule label of {@code match}, values longer than {@code keys} allows digested. */
  public static String rule(Match match, CounterKeys keys) {
    boolean detailed = match.node().detailedMetric();
    List<MatchedLevel> levels = match.levels();
    if (!detailed && !anyValueToMetric(levels)) {
      return match.node().path();
    }
    boolean shared = anyShareThreshold(levels);
    StringBuilder out = new StringBuilder();
    for (MatchedLevel level : levels) {
      if (out.length() > 0) {
        out.append('.');
      }
      Entry entry = level.entry();
      if (level.sharesPattern()) {
        out.append(join(level.node().key(), level.node().value()));
      } else if (detailed && !shared) {
        out.append(entry.key()).append('_').append(keys.bounded(entry.value()));
      } else if (detailed || level.node().valueToMetric()) {
        out.append(join(entry.key(), keys.bounded(entry.value())));
      } else {
        switch (level.kind()) {
          case EXACT -> out.append(join(entry.key(), entry.value()));
          case WILDCARD -> out.append(join(level.node().key(), level.node().value()));
          case KEY_ONLY -> out.append(entry.key());
        }
      }
    }
    return bounded(out.toString());
  }

  /**
   * Returns the one rule label every match of the rule at the end of {@code path} (its rules,
   * outermost first) has, as {@link #rule(Match)} writes it, or empty when its labels are built
   * from request values: when some level matching a wildcard without {@code share_threshold}, or
   * any value of its key, writes the entry's value ({@code value_to_metric} on that level, or
   * {@code detailed_metric} on the rule).
   */
  public static Optional<String> configLabel(List<DescriptorNode> path) {
    boolean detailed = path.get(path.size() - 1).detailedMetric();
    List<MatchedLevel> levels = new ArrayList<>(path.size());
    for (DescriptorNode node : path) {
      MatchKind kind =
          node.isKeyOnly()
              ? MatchKind.KEY_ONLY
              : node.isWildcard() ? MatchKind.WILDCARD : MatchKind.EXACT;
      MatchedLevel level = new MatchedLevel(new Entry(node.key(), node.value()), node, kind);
      if (kind != MatchKind.EXACT
          && !level.sharesPattern()
          && (detailed || node.valueToMetric())) {
        return Optional.empty();
      }
      levels.add(level);
    }
    return Optional.of(rule(new Match(levels)));
  }

  /** The first level of every limit override's rule label. */
  public static final String OVERRIDE_PREFIX = "limit_override";

  /**
   * Returns the rule label of a limit override: {@code limit_override} followed by the entries'
   * keys ({@code limit_override.k1.k2}). Values are left out because they come from the request,
   * so each distinct one would create meters that are never released.
   */
  public static String override(List<Entry> entries) {
    return override(entries, new CounterKeys(Integer.MAX_VALUE));
  }

  /** Returns the rule label of a limit override, keys longer than {@code keys} allows digested. */
  public static String override(List<Entry> entries, CounterKeys keys) {
    StringBuilder out = new StringBuilder(OVERRIDE_PREFIX);
    for (Entry entry : entries) {
      out.append('.').append(keys.bounded(entry.key()));
    }
    return bounded(out.toString());
  }

  /** Returns {@code label}, or its first characters and its digest when it is too long. */
  static String bounded(String label) {
    if (label.length() <= MAX_LABEL_CHARS) {
      return label;
    }
    String digest = CounterKeys.digest(label);
    int keep = MAX_LABEL_CHARS - digest.length() - 1;
    if (Character.isHighSurrogate(label.charAt(keep - 1))) {
      keep--;
    }
    return label.substring(0, keep) + "." + digest;
  }

  private static boolean anyShareThreshold(List<MatchedLevel> levels) {
    for (int i = 0; i < levels.size(); i++) {
      if (levels.get(i).sharesPattern()) {
        return true;
      }
    }
    return false;
  }

  private static boolean anyValueToMetric(List<MatchedLevel> levels) {
    for (int i = 0; i < levels.size(); i++) {
      if (levels.get(i).node().valueToMetric()) {
        return true;
      }
    }
    return false;
  }

  private static String join(String key, String value) {
    return value.isEmpty() ? key : key + "_" + value;
  }
}
