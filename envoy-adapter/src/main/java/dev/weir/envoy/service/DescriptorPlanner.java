package dev.weir.envoy.service;

import dev.weir.core.model.Algorithm;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.envoy.config.DomainConfig;
import dev.weir.envoy.config.RateLimitRule;
import dev.weir.envoy.config.Units;
import dev.weir.envoy.match.DescriptorMatcher;
import dev.weir.envoy.match.Entry;
import dev.weir.envoy.match.Match;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Turns one Envoy descriptor into a {@link DescriptorPlan}: match it, then build its native
 * request.
 */
final class DescriptorPlanner {

  private DescriptorPlanner() {}

  /**
   * Plans descriptor number {@code index} of a request for {@code domainName}, whose config is
   * {@code domain} (empty when unknown); {@code requestHits} is the request-level hit count and
   * {@code now} the request's time. An unusable limit override throws {@code INVALID_ARGUMENT}.
   */
  static DescriptorPlan plan(
      String domainName,
      Optional<DomainConfig> domain,
      RateLimitDescriptor descriptor,
      int index,
      long requestHits,
      long now) {
    if (domain.isEmpty()) {
      return new DescriptorPlan.NoLimit();
    }
    List<Entry> entries = new ArrayList<>(descriptor.getEntriesCount());
    for (RateLimitDescriptor.Entry e : descriptor.getEntriesList()) {
      entries.add(new Entry(e.getKey(), e.getValue()));
    }
    long hits = hits(descriptor, requestHits);
    if (descriptor.hasLimit()) {
      RateLimitDescriptor.RateLimitOverride override = descriptor.getLimit();
      Unit unit =
          Units.fromOverride(override.getUnit())
              .orElseThrow(
                  () ->
                      Status.INVALID_ARGUMENT
                          .withDescription(
                              "descriptors["
                                  + index
                                  + "].limit.unit: invalid value '"
                                  + override.getUnitValue()
                                  + "': allowed values are SECOND, MINUTE, HOUR, DAY, MONTH, YEAR")
                          .asRuntimeException());
      long rpu = Integer.toUnsignedLong(override.getRequestsPerUnit());
      RateLimitRequest request =
          new RateLimitRequest(
              CounterKeys.overrideName(domainName, unit),
              CounterKeys.uniqueKey(entries),
              hits,
              rpu,
              Units.millis(unit),
              Algorithm.FIXED_WINDOW.number(),
              Behavior.BATCHING,
              0,
              now,
              Map.of());
      return new DescriptorPlan.Limited(
          domainName, StatsKeys.override(entries), "", rpu, unit, false, false, List.of(), request);
    }
    Optional<Match> match = DescriptorMatcher.match(domain.get().root(), entries);
    if (match.isEmpty()) {
      return new DescriptorPlan.NoLimit();
    }
    RateLimitRule rule = match.get().rule();
    if (rule.unlimited()) {
      return new DescriptorPlan.Unlimited(rule.name(), rule.replaces());
    }
    RateLimitRequest request =
        new RateLimitRequest(
            CounterKeys.ruleName(domainName, match.get()),
            CounterKeys.uniqueKey(match.get()),
            hits,
            rule.requestsPerUnit(),
            Units.millis(rule.unit()),
            rule.algorithm().number(),
            rule.behavior(),
            rule.burst(),
            now,
            Map.of());
    return new DescriptorPlan.Limited(
        domainName,
        StatsKeys.rule(match.get()),
        rule.name(),
        rule.requestsPerUnit(),
        rule.unit(),
        match.get().node().shadowMode(),
        match.get().node().quotaMode(),
        rule.replaces(),
        request);
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
