package dev.weir.envoy.service;

import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.model.Algorithm;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.envoy.config.DescriptorNode;
import dev.weir.envoy.config.DomainConfig;
import dev.weir.envoy.config.RateLimitRule;
import dev.weir.envoy.config.Units;
import dev.weir.envoy.match.DescriptorMatcher;
import dev.weir.envoy.match.Entry;
import dev.weir.envoy.match.Match;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Turns one Envoy descriptor into a {@link DescriptorPlan}: match it, then build its native
 * request. Pure: the request's time comes in as an argument.
 */
final class DescriptorPlanner {

  private final CounterKeys keys;
  private final int maxEntries;

  /**
   * Creates the planner writing counter keys with {@code keys} and refusing descriptors of more
   * than {@code maxEntries} entries.
   */
  DescriptorPlanner(CounterKeys keys, int maxEntries) {
    this.keys = keys;
    this.maxEntries = maxEntries;
  }

  /**
   * Plans a descriptor of a request for {@code domainName}, whose config is {@code domain} (null
   * when unknown); {@code requestHits} is the request-level hit count and {@code now} the request's
   * time.
   */
  DescriptorPlan plan(
      String domainName,
      DomainConfig domain,
      RateLimitDescriptor descriptor,
      long requestHits,
      long now) {
    if (domain == null) {
      return new DescriptorPlan.NoLimit();
    }
    int n = descriptor.getEntriesCount();
    if (n > maxEntries) {
      return new DescriptorPlan.Refused(RefusalReason.TOO_MANY_ENTRIES);
    }
    List<Entry> entries = entries(descriptor);
    long hits = hits(descriptor, requestHits);
    if (descriptor.hasLimit()) {
      return override(domainName, descriptor.getLimit(), entries, hits, now);
    }
    Match match = DescriptorMatcher.matchOrNull(domain.root(), entries);
    if (match == null) {
      return new DescriptorPlan.NoLimit();
    }
    DescriptorNode node = match.node();
    List<RateLimitRule> limits = node.limits();
    if (limits.get(0).unlimited()) {
      RateLimitRule rule = limits.get(0);
      return new DescriptorPlan.Unlimited(
          rule.name(), rule.name().isEmpty() ? node.path() : rule.name(), rule.replaces());
    }
    String uniqueKey = keys.uniqueKey(match);
    List<DescriptorPlan.Policy> policies = new ArrayList<>(limits.size());
    for (int i = 0; i < limits.size(); i++) {
      RateLimitRule rule = limits.get(i);
      RateLimitRequest request =
          new RateLimitRequest(
              keys.boundedName(node.counterName(i)),
              uniqueKey,
              hits,
              rule.requestsPerUnit(),
              rule.requestDuration(),
              rule.algorithm().number(),
              rule.requestBehavior(),
              rule.burst(),
              now,
              rule.requestMetadata());
      policies.add(
          new DescriptorPlan.Policy(
              rule.name(),
              node.policyNames().get(i),
              rule.name().isEmpty() ? node.path() : rule.name(),
              rule.requestsPerUnit(),
              rule.unit(),
              rule.replaces(),
              request));
    }
    String statsRule = StatsKeys.rule(match, keys);
    return new DescriptorPlan.Limited(
        domainName,
        statsRule,
        !statsRule.equals(node.path()),
        node.shadowMode(),
        node.quotaMode(),
        policies,
        node.metadata());
  }

  /** Returns the entries of {@code descriptor} in its order, as they are matched and counted. */
  static List<Entry> entries(RateLimitDescriptor descriptor) {
    int n = descriptor.getEntriesCount();
    List<Entry> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      RateLimitDescriptor.Entry e = descriptor.getEntries(i);
      out.add(new Entry(e.getKey(), e.getValue()));
    }
    return out;
  }

  /**
   * Plans a descriptor carrying a limit override: counted per entry set under the override's unit;
   * an override with the unit {@code UNKNOWN} (which Envoy sends for route metadata saying {@code
   * unit: UNKNOWN}) or another unit outside SECOND to YEAR, or on a descriptor without entries, is
   * refused (docs/envoy.md).
   */
  private DescriptorPlan override(
      String domainName,
      RateLimitDescriptor.RateLimitOverride override,
      List<Entry> entries,
      long hits,
      long now) {
    Optional<Unit> unit = Units.fromOverride(override.getUnit());
    if (unit.isEmpty() || entries.isEmpty()) {
      return new DescriptorPlan.Refused(RefusalReason.INVALID_OVERRIDE);
    }
    long rpu = Integer.toUnsignedLong(override.getRequestsPerUnit());
    RateLimitRequest request =
        new RateLimitRequest(
            keys.boundedName(CounterKeys.overrideName(domainName, unit.get())),
            keys.uniqueKey(entries),
            hits,
            rpu,
            Units.millis(unit.get()),
            Algorithm.FIXED_WINDOW.number(),
            Behavior.BATCHING,
            0,
            now,
            Map.of());
    String statsRule = StatsKeys.override(entries, keys);
    return new DescriptorPlan.Limited(
        domainName,
        statsRule,
        true,
        false,
        false,
        List.of(
            new DescriptorPlan.Policy(
                "",
                overridePolicyName(unit.get()),
                statsRule,
                rpu,
                unit.get(),
                List.of(),
                request)),
        Map.of());
  }

  /** Returns the IETF policy name of a limit override in {@code unit}. */
  private static String overridePolicyName(Unit unit) {
    return switch (unit) {
      case SECOND -> "limit_override_second";
      case MINUTE -> "limit_override_minute";
      case HOUR -> "limit_override_hour";
      case DAY -> "limit_override_day";
      case MONTH -> "limit_override_month";
      default -> "limit_override_year";
    };
  }

  /**
   * Returns the hits of {@code descriptor}: its own {@code hits_addend} when set (0 checks without
   * consuming), else {@code requestHits}.
   */
  private static long hits(RateLimitDescriptor descriptor, long requestHits) {
    if (descriptor.hasHitsAddend()) {
      long v = descriptor.getHitsAddend().getValue();
      return v < 0 ? Long.MAX_VALUE : v;
    }
    return requestHits;
  }
}
