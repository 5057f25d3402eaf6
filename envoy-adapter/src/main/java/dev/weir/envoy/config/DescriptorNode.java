package dev.weir.envoy.config;

import java.util.List;
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
 * @param source where the rule is written, {@code file:line}
 * @param limits the rule's policies, every one of which must pass: one for {@code rate_limit},
 *     several for Weir's {@code rate_limits}; empty when the rule only groups nested rules (or
 *     whitelists)
 * @param policyNames the name each policy of {@code limits} has in the IETF {@code
 *     RateLimit-Policy} header, see {@link #policyName(RateLimitRule, String, int, int)}
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
    String source,
    List<RateLimitRule> limits,
    List<String> policyNames,
    boolean shadowMode,
    boolean quotaMode,
    boolean detailedMetric,
    boolean valueToMetric,
    boolean shareThreshold,
    Map<String, Object> metadata,
    DescriptorLevel children) {

  /** Creates a node, copying {@code limits} and {@code policyNames}. */
  public DescriptorNode {
    limits = List.copyOf(limits);
    policyNames = List.copyOf(policyNames);
    if (policyNames.size() != limits.size()) {
      throw new IllegalArgumentException(
          policyNames.size() + " policy names for " + limits.size() + " policies");
    }
  }

  /**
   * Returns the policy name of {@code rule}, policy {@code index} of {@code count} of the rule at
   * {@code path}: its YAML {@code name} when set, else the path, followed by {@code |} and the
   * index when the rule has several policies (as {@link #counterName(int)} tells them apart).
   */
  public static String policyName(RateLimitRule rule, String path, int index, int count) {
    if (!rule.name().isEmpty()) {
      return rule.name();
    }
    return count == 1 ? path : path + "|" + index;
  }

  /** Returns the rule's first (for {@code rate_limit}, only) policy, empty when it has none. */
  public Optional<RateLimitRule> rule() {
    return limits.isEmpty() ? Optional.empty() : Optional.of(limits.get(0));
  }

  /** Returns whether the rule limits what it matches. */
  public boolean hasLimit() {
    return !limits.isEmpty();
  }

  /**
   * Returns the native {@code name} of the counter of policy {@code index}: the rule's {@link
   * #counterName()} for a single policy, followed by {@code |} and the index for several.
   */
  public String counterName(int index) {
    return limits.size() == 1 ? counterName : counterName + "|" + index;
  }

  /** Returns whether this rule's value is a {@code *} pattern. */
  public boolean isWildcard() {
    return value.indexOf('*') >= 0;
  }

  /** Returns whether this rule matches any value of its key. */
  public boolean isKeyOnly() {
    return value.isEmpty();
  }
}
