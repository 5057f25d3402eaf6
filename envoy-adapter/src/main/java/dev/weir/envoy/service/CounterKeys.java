package dev.weir.envoy.service;

import dev.weir.envoy.match.Entry;
import dev.weir.envoy.match.Match;
import dev.weir.envoy.match.MatchKind;
import dev.weir.envoy.match.MatchedLevel;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit;
import java.util.List;

/**
 * The native {@code name} and {@code unique_key} of an Envoy descriptor's counter.
 *
 * <p>Every string is written length-prefixed ({@code <length>:<text>}), so no choice of keys and
 * values can make two different rules, or two different descriptors, share a counter;
 * envoyproxy/ratelimit's {@code _}-joined keys cannot promise that.
 */
public final class CounterKeys {

  private CounterKeys() {}

  /**
   * Returns the name of the counter namespace of a matched rule: the domain and the matched rule's
   * path, each level as its key and, unless key-only, its configured value or pattern.
   */
  public static String ruleName(String domain, Match match) {
    StringBuilder out = new StringBuilder("envoy:");
    lengthPrefixed(out, domain);
    for (MatchedLevel level : match.levels()) {
      out.append('/');
      lengthPrefixed(out, level.node().key());
      if (!level.node().isKeyOnly()) {
        out.append('=');
        lengthPrefixed(out, level.node().value());
      }
    }
    return out.toString();
  }

  /** Returns the name of the counter namespace of a descriptor carrying a limit override. */
  public static String overrideName(String domain, Unit unit) {
    StringBuilder out = new StringBuilder("envoy-override:");
    lengthPrefixed(out, domain);
    return out.append('/').append(unit.name()).toString();
  }

  /**
   * Returns the counter key of a matched descriptor: its entries' keys and actual values, except
   * that an entry matched by a {@code share_threshold} wildcard contributes the pattern, so all its
   * values share one counter.
   */
  public static String uniqueKey(Match match) {
    StringBuilder out = new StringBuilder();
    for (MatchedLevel level : match.levels()) {
      boolean shared = level.kind() == MatchKind.WILDCARD && level.node().shareThreshold();
      entry(out, level.entry().key(), shared ? level.node().value() : level.entry().value());
    }
    return out.toString();
  }

  /** Returns the counter key of {@code entries} with their actual values. */
  public static String uniqueKey(List<Entry> entries) {
    StringBuilder out = new StringBuilder();
    for (Entry e : entries) {
      entry(out, e.key(), e.value());
    }
    return out.toString();
  }

  private static void entry(StringBuilder out, String key, String value) {
    if (out.length() > 0) {
      out.append(',');
    }
    lengthPrefixed(out, key);
    out.append('=');
    lengthPrefixed(out, value);
  }

  private static void lengthPrefixed(StringBuilder out, String text) {
    out.append(text.length()).append(':').append(text);
  }
}
