package dev.weir.envoy.rlqs;

import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.envoy.config.DescriptorNode;
import dev.weir.envoy.config.DomainConfig;
import dev.weir.envoy.config.RateLimitRule;
import dev.weir.envoy.match.DescriptorMatcher;
import dev.weir.envoy.match.Entry;
import dev.weir.envoy.match.Match;
import dev.weir.envoy.service.CounterKeys;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * Maps an RLQS bucket onto the descriptor config: its entries, sorted by key, are matched as one
 * descriptor against the domain's rules, exactly as a {@code ShouldRateLimit} descriptor is. Each
 * policy of the matched rule becomes a counter named {@value #PREFIX} + the rule's counter name,
 * keyed by the bucket's entries ({@link CounterKeys}), so RLQS buckets and {@code ShouldRateLimit}
 * descriptors never share a counter. Pure.
 */
public final class BucketPlanner {

  /** The most characters of a bucket entry a refusal's reason quotes. */
  private static final int QUOTED_CHARS = 64;

  /** The prefix of every RLQS counter name. */
  public static final String PREFIX = "rlqs/";

  private static final Comparator<Map.Entry<String, String>> BY_KEY = Map.Entry.comparingByKey();

  private final CounterKeys keys;
  private final int maxEntries;
  private final boolean shadowMode;

  /**
   * Creates the planner writing counter keys with {@code keys} and refusing buckets of more than
   * {@code maxEntries} entries.
   */
  public BucketPlanner(CounterKeys keys, int maxEntries) {
    this(keys, maxEntries, false);
  }

  /**
   * Creates the planner as {@link #BucketPlanner(CounterKeys, int)} does, planning every limited
   * bucket in shadow mode when {@code shadowMode} ({@code WEIR_ENVOY_SHADOW_MODE}).
   */
  public BucketPlanner(CounterKeys keys, int maxEntries, boolean shadowMode) {
    this.keys = keys;
    this.maxEntries = maxEntries;
    this.shadowMode = shadowMode;
  }

  /** Returns the bucket's entries sorted by key: the descriptor it is matched as. */
  public static List<Entry> entries(Map<String, String> bucket) {
    List<Map.Entry<String, String>> sorted = new ArrayList<>(bucket.entrySet());
    sorted.sort(BY_KEY);
    List<Entry> out = new ArrayList<>(sorted.size());
    for (Map.Entry<String, String> e : sorted) {
      out.add(new Entry(e.getKey(), e.getValue()));
    }
    return out;
  }

  /**
   * Returns the name of the bucket, unique for its entries: the counter key of the sorted entries.
   */
  public String name(Map<String, String> bucket) {
    return keys.uniqueKey(entries(bucket));
  }

  /**
   * Returns {@code text} in single quotes, cut to its first {@value #QUOTED_CHARS} characters
   * followed by its length when longer: bucket entries come from request headers, which may be
   * tens of kilobytes, and a refusal's reason is logged.
   */
  private static String quoted(String text) {
    if (text.length() <= QUOTED_CHARS) {
      return "'" + text + "'";
    }
    return "'" + text.substring(0, QUOTED_CHARS) + "…' (" + text.length() + " characters)";
  }

  /**
   * Plans {@code bucket} under {@code domain} (null when the domain is unknown); a limited bucket
   * whose rule has {@code shadow_mode}, or any under the global shadow mode, is planned in shadow.
   */
  public BucketPlan plan(DomainConfig domain, Map<String, String> bucket) {
    if (bucket.size() > maxEntries) {
      return new BucketPlan.Refused(
          "the bucket has "
              + bucket.size()
              + " entries; at most "
              + maxEntries
              + " are allowed (WEIR_MAX_DESCRIPTOR_ENTRIES)",
          RefusalReason.TOO_MANY_ENTRIES);
    }
    for (Map.Entry<String, String> e : bucket.entrySet()) {
      if (e.getKey().isEmpty()) {
        return new BucketPlan.Refused(
            "a bucket entry of value "
                + quoted(e.getValue())
                + " has an empty key; keys and values must be non-empty",
            null);
      }
      if (e.getValue().isEmpty()) {
        return new BucketPlan.Refused(
            "bucket entry "
                + quoted(e.getKey())
                + " has an empty value; keys and values must be non-empty",
            null);
      }
    }
    if (domain == null || bucket.isEmpty()) {
      return new BucketPlan.Unmatched();
    }
    Match match = DescriptorMatcher.matchOrNull(domain.root(), entries(bucket));
    if (match == null) {
      return new BucketPlan.Unmatched();
    }
    DescriptorNode node = match.node();
    List<RateLimitRule> limits = node.limits();
    if (limits.get(0).unlimited()) {
      return new BucketPlan.Unlimited();
    }
    String uniqueKey = keys.uniqueKey(match);
    List<RateLimitRequest> policies = new ArrayList<>(limits.size());
    for (int i = 0; i < limits.size(); i++) {
      RateLimitRule rule = limits.get(i);
      policies.add(
          RateLimitRequest.builder(keys.boundedName(PREFIX + node.counterName(i)), uniqueKey)
              .hits(0)
              .limit(rule.requestsPerUnit())
              .duration(rule.windowMillis())
              .algorithm(rule.algorithm())
              .burst(rule.burst())
              .build());
    }
    return new BucketPlan.Limited(policies, shadowMode || node.shadowMode());
  }
}
