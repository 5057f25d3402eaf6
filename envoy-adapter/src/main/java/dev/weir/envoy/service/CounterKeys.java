package dev.weir.envoy.service;

import dev.weir.core.limiter.InputLimits;
import dev.weir.envoy.config.CounterNames;
import dev.weir.envoy.match.Entry;
import dev.weir.envoy.match.Match;
import dev.weir.envoy.match.MatchedLevel;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.List;

/**
 * The native {@code name} and {@code unique_key} of an Envoy descriptor's counter.
 *
 * <p>Every string is written length-prefixed ({@code <length>:<text>}), so no choice of keys and
 * values can make two different rules, or two different descriptors, share a counter;
 * envoyproxy/ratelimit's {@code _}-joined keys cannot promise that. A key or value longer than {@code
 * maxVerbatimBytes} UTF-8 bytes is written as {@code #} and the base64url SHA-256 digest of its UTF-8
 * bytes instead: it still counts on its own counter (two different long values never share one),
 * but a counter key stays bounded in size whatever a client sends, and no length prefix starts
 * with {@code #}, so a digest never equals a short value.
 *
 * <p>A whole key or name longer than a native item may be ({@code WEIR_MAX_KEY_LENGTH}, {@code
 * WEIR_MAX_NAME_LENGTH}; many entries, or long patterns in the config) is likewise written as
 * {@code #} and its digest, so that the node owning the counter, which refuses longer ones, accepts
 * it: no {@code =} occurs in a digest, and every key of entries has one.
 */
public final class CounterKeys {

  private final int maxVerbatimBytes;
  private final int maxNameBytes;
  private final int maxKeyBytes;

  /**
   * Creates the keys writing strings of up to {@code maxVerbatimBytes} UTF-8 bytes verbatim, with
   * no bound on whole names and keys: for labels, not counters.
   */
  public CounterKeys(int maxVerbatimBytes) {
    this(maxVerbatimBytes, Integer.MAX_VALUE, Integer.MAX_VALUE);
  }

  /**
   * Creates the keys writing strings of up to {@code maxVerbatimBytes} UTF-8 bytes verbatim, and
   * whole names and keys of up to {@code maxNameBytes} and {@code maxKeyBytes}.
   */
  public CounterKeys(int maxVerbatimBytes, int maxNameBytes, int maxKeyBytes) {
    if (maxVerbatimBytes < 1 || maxNameBytes < 1 || maxKeyBytes < 1) {
      throw new IllegalArgumentException(
          "maxVerbatimBytes, maxNameBytes and maxKeyBytes must be at least 1, got "
              + maxVerbatimBytes
              + ", "
              + maxNameBytes
              + " and "
              + maxKeyBytes);
    }
    this.maxVerbatimBytes = maxVerbatimBytes;
    this.maxNameBytes = maxNameBytes;
    this.maxKeyBytes = maxKeyBytes;
  }

  /** Returns the keys of counters whose items {@code limits} accept. */
  public static CounterKeys of(InputLimits limits) {
    return new CounterKeys(
        limits.maxDescriptorValueBytes(), limits.maxNameBytes(), limits.maxKeyBytes());
  }

  /** Returns {@code name}, or {@code #} and its digest when it is longer than a name may be. */
  public String boundedName(String name) {
    return longerThan(name, maxNameBytes) ? digest(name) : name;
  }

  /**
   * Returns the name of the counter namespace of a matched rule: the domain and the matched rule's
   * path, each level as its key and, unless key-only, its configured value or pattern. The compiled
   * config holds it as {@link dev.weir.envoy.config.DescriptorNode#counterName()}.
   */
  public static String ruleName(String domain, Match match) {
    String name = CounterNames.domain(domain);
    for (MatchedLevel level : match.levels()) {
      name = CounterNames.level(name, level.node().key(), level.node().value());
    }
    return name;
  }

  /** Returns the name of the counter namespace of a descriptor carrying a limit override. */
  public static String overrideName(String domain, Unit unit) {
    return CounterNames.lengthPrefixed(new StringBuilder("envoy-override:"), domain)
        .append('/')
        .append(unit.name())
        .toString();
  }

  /**
   * Returns the counter key of a matched descriptor: its entries' keys and actual values, except
   * that an entry matched by a {@code share_threshold} wildcard contributes the pattern, so all its
   * values share one counter.
   */
  public String uniqueKey(Match match) {
    StringBuilder out = new StringBuilder(64);
    List<MatchedLevel> levels = match.levels();
    for (int i = 0; i < levels.size(); i++) {
      MatchedLevel level = levels.get(i);
      entry(
          out,
          level.entry().key(),
          level.sharesPattern() ? level.node().value() : level.entry().value());
    }
    return boundedKey(out.toString());
  }

  /** Returns the counter key of {@code entries} with their actual values. */
  public String uniqueKey(List<Entry> entries) {
    StringBuilder out = new StringBuilder(64);
    for (int i = 0; i < entries.size(); i++) {
      entry(out, entries.get(i).key(), entries.get(i).value());
    }
    return boundedKey(out.toString());
  }

  /** Returns whether {@code text} is written as its digest rather than verbatim. */
  public boolean isDigested(String text) {
    return longerThan(text, maxVerbatimBytes);
  }

  private String boundedKey(String key) {
    return longerThan(key, maxKeyBytes) ? digest(key) : key;
  }

  /** Returns whether {@code text} is longer than {@code maxBytes} in UTF-8. */
  private static boolean longerThan(String text, int maxBytes) {
    return text.length() > maxBytes / 3
        && (text.length() > maxBytes || utf8Length(text) > maxBytes);
  }

  /** Returns {@code text} verbatim, or {@code #} and its digest when it is longer than allowed. */
  public String bounded(String text) {
    return isDigested(text) ? digest(text) : text;
  }

  private void entry(StringBuilder out, String key, String value) {
    if (out.length() > 0) {
      out.append(',');
    }
    part(out, key);
    out.append('=');
    part(out, value);
  }

  private void part(StringBuilder out, String text) {
    if (isDigested(text)) {
      out.append(digest(text));
    } else {
      CounterNames.lengthPrefixed(out, text);
    }
  }

  /** Returns {@code #} and the unpadded base64url SHA-256 digest of {@code text}'s UTF-8 bytes. */
  static String digest(String text) {
    try {
      byte[] hash =
          MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
      return "#" + Base64.getUrlEncoder().withoutPadding().encodeToString(hash);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JVM provides SHA-256", e);
    }
  }

  /** Returns the length of {@code text} in UTF-8 bytes, without encoding it. */
  static int utf8Length(String text) {
    int bytes = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < 0x80) {
        bytes += 1;
      } else if (c < 0x800 || Character.isSurrogate(c)) {
        bytes += 2;
      } else {
        bytes += 3;
      }
    }
    return bytes;
  }
}
