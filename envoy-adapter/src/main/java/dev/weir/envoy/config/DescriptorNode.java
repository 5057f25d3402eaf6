package dev.weir.envoy.config;

import java.util.Map;
import java.util.Optional;

/**
 * One compiled descriptor rule: what it matches ({@code key}, optional {@code value}, possibly a
 * {@code *} pattern), its limit and flags, and the rules nested under it.
 *
 * @param key the entry key this rule matches
 * @param value the entry value; empty for a key-only (per-value) rule
 * @param path the rule's path from the domain, e.g. {@code key_value.sub}, as envoyproxy/ratelimit
 *     prints it
 * @param counterName the native {@code name} of the rule's counters, see {@link CounterNames}
 * @param rule the limit; empty when the rule only groups nested rules (or whitelists)
 * @param shadowMode whether over-limit answers are reported as OK
 * @param quotaMode whether the rule is a soft quota (see {@code docs/envoy.md})
 * @param detailedMetric whether metrics name the request's actual values
 * @param valueToMetric whether metrics name the actual value at this level
 * @param shareThreshold whether every value matching this wildcard shares one counter
 * @param metadata free-form metadata from the YAML
 * @param children the rules nested under this one
 */
public record DescriptorNode(
    String key,
    String value,
    String path,
    String counterName,
    Optional<RateLimitRule> rule,
    boolean shadowMode,
    boolean quotaMode,
    boolean detailedMetric,
    boolean valueToMetric,
    boolean shareThreshold,
    Map<String, Object> metadata,
    DescriptorLevel children) {

  /** Returns whether this rule's value is a {@code *} pattern. */
  public boolean isWildcard() {
    return value.indexOf('*') >= 0;
  }

  /** Returns whether this rule matches any value of its key. */
  public boolean isKeyOnly() {
    return value.isEmpty();
  }
}
