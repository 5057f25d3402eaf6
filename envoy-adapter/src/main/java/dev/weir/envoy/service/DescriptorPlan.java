package dev.weir.envoy.service;

import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.model.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit;
import java.util.List;

/** What to do with one request descriptor once matched. */
sealed interface DescriptorPlan {

  /** Returns the rule name other rules' {@code replaces} refer to; empty when unnamed. */
  default String ruleName() {
    return "";
  }

  /** Returns the rule names this descriptor's rule replaces. */
  default List<String> replaces() {
    return List.of();
  }

  /** No rule limits the descriptor (no match, unknown domain, or dropped by {@code replaces}). */
  record NoLimit() implements DescriptorPlan {}

  /** The matched rule is {@code unlimited}. */
  record Unlimited(String ruleName, List<String> replaces) implements DescriptorPlan {}

  /**
   * The descriptor cannot come from a real Envoy (too many entries, a limit override without a
   * valid unit), so it is answered OVER_LIMIT without touching a counter: an error would make Envoy
   * fail open.
   *
   * @param reason what the metrics count it as
   */
  record Refused(RefusalReason reason) implements DescriptorPlan {}

  /**
   * The descriptor is counted by one native request.
   *
   * @param domain the request's domain, for metrics
   * @param statsRule the rule label for metrics
   * @param ruleName the rule's name, also {@code current_limit.name}
   * @param requestsPerUnit the limit
   * @param unit the window unit
   * @param shadowMode whether over-limit is reported as OK
   * @param quotaMode whether the rule is a soft quota
   * @param replaces names of rules this rule drops
   * @param request the native request
   */
  record Limited(
      String domain,
      String statsRule,
      String ruleName,
      long requestsPerUnit,
      Unit unit,
      boolean shadowMode,
      boolean quotaMode,
      List<String> replaces,
      RateLimitRequest request)
      implements DescriptorPlan {}
}
