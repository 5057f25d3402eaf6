package dev.weir.envoy.config;

/**
 * The native {@code name} of a descriptor rule's counters: {@code envoy:} and the domain, then per
 * level of the rule's path {@code /} and the key and, unless key-only, {@code =} and the configured
 * value or pattern. Every string is written length-prefixed ({@code <length>:<text>}), so no choice of
 * keys and values can make two different rules share a counter; envoyproxy/ratelimit's {@code
 * _}-joined keys cannot promise that. Rule names depend only on the config, so the compiler computes
 * each rule's once.
 */
public final class CounterNames {

  private CounterNames() {}

  /** Returns the name of a domain's root, the prefix of every rule name in it. */
  public static String domain(String domain) {
    return lengthPrefixed(new StringBuilder("envoy:"), domain).toString();
  }

  /**
   * Returns the name of the rule matching {@code key} and {@code value} ({@code ""} for key-only)
   * under the rule or domain named {@code parent}.
   */
  public static String level(String parent, String key, String value) {
    StringBuilder out = new StringBuilder(parent).append('/');
    lengthPrefixed(out, key);
    if (!value.isEmpty()) {
      lengthPrefixed(out.append('='), value);
    }
    return out.toString();
  }

  /**
   * Returns the length of {@link #level(String, String, String)} for a parent name {@code
   * parentLength} characters long, without building it.
   */
  public static long levelLength(int parentLength, String key, String value) {
    long length = parentLength + 1L + lengthPrefixedLength(key);
    return value.isEmpty() ? length : length + 1 + lengthPrefixedLength(value);
  }

  private static long lengthPrefixedLength(String text) {
    return (long) Integer.toString(text.length()).length() + 1 + text.length();
  }

  /** Appends {@code text} to {@code out} as {@code <length>:<text>} and returns {@code out}. */
  public static StringBuilder lengthPrefixed(StringBuilder out, String text) {
    return out.append(text.length()).append(':').append(text);
  }
}
