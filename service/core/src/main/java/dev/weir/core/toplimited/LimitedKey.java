package dev.weir.core.toplimited;

import java.util.List;
import java.util.Objects;

/**
 * A key answered over its limit, as the top-limited view names it.
 *
 * @param source the front door that decided: {@link #ENVOY} or {@link #NATIVE}
 * @param domain the Envoy domain; empty for a native decision
 * @param rule the rule that fired: the Envoy rule's name or descriptor path, the native {@code
 *     name}
 * @param entries the key as alternating names and values: the descriptor's entries for Envoy,
 *     {@code unique_key} and its value for a native decision
 */
public record LimitedKey(String source, String domain, String rule, List<String> entries) {

  /** The source of Envoy's {@code ShouldRateLimit} decisions. */
  public static final String ENVOY = "envoy";

  /** The source of native {@code GetRateLimits} decisions. */
  public static final String NATIVE = "native";

  /** Checks that no part is null and that {@code entries} pairs names with values. */
  public LimitedKey {
    Objects.requireNonNull(source, "source");
    Objects.requireNonNull(domain, "domain");
    Objects.requireNonNull(rule, "rule");
    entries = List.copyOf(entries);
    if (entries.size() % 2 != 0) {
      throw new IllegalArgumentException("entries must pair names with values: " + entries);
    }
  }

  /** Returns the key of a native item: its {@code name} as the rule, its {@code unique_key}. */
  public static LimitedKey ofNative(String name, String uniqueKey) {
    return new LimitedKey(NATIVE, "", name, List.of("unique_key", uniqueKey));
  }
}
