package dev.weir.envoy.service;

import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.model.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** What to do with one request descriptor once matched. */
sealed interface DescriptorPlan {

  /** Returns the rule names this descriptor's policies replace. */
  default List<String> replaces() {
    return List.of();
  }

  /** Returns this plan without the policies named in {@code replaced}, as {@code replaces} asks. */
  default DescriptorPlan without(Set<String> replaced) {
    return this;
  }

  /**
   * Applies {@code replaces} across the plans of one request, in place: the policies whose name
   * another matched rule replaces are dropped. An unlimited rule stays unlimited even when named,
   * as envoyproxy/ratelimit reports it.
   */
  static void applyReplaces(List<DescriptorPlan> plans) {
    Set<String> replaced = new java.util.HashSet<>();
    for (DescriptorPlan plan : plans) {
      replaced.addAll(plan.replaces());
    }
    if (!replaced.isEmpty()) {
      plans.replaceAll(plan -> plan.without(replaced));
    }
  }

  /** No rule limits the descriptor (no match, unknown domain, or dropped by {@code replaces}). */
  record NoLimit() implements DescriptorPlan {}

  /**
   * The matched rule is {@code unlimited}: it is not counted, and {@code replaces} does not drop
   * it (envoyproxy/ratelimit reports it unlimited whichever rule names it).
   *
   * @param ruleName the rule's YAML {@code name}, empty when it has none
   * @param label the rule as operators name it: {@code ruleName} when set, else its descriptor path
   * @param replaces names of rules this rule drops
   */
  record Unlimited(String ruleName, String label, List<String> replaces)
      implements DescriptorPlan {}

  /**
   * The descriptor cannot come from a real Envoy (too many entries, a limit override without a
   * valid unit), so it is answered OVER_LIMIT without touching a counter: an error would make Envoy
   * fail open.
   *
   * @param reason what the metrics count it as
   */
  record Refused(RefusalReason reason) implements DescriptorPlan {}

  /**
   * The descriptor is counted by one native request per policy of its rule; it is over the limit
   * when any policy is.
   *
   * @param domain the request's domain, for metrics
   * @param statsRule the rule label for metrics
   * @param statsRuleFromValues whether the label is built from request values ({@code
   *     detailed_metric}, {@code value_to_metric}, a limit override's keys) rather than a rule's
   *     path in the config
   * @param shadowMode whether over-limit is reported as OK
   * @param quotaMode whether the rule is a soft quota
   * @param policies the rule's policies, at least one, in config order
   * @param metadata the matched rule's {@code metadata}, empty for a limit override
   */
  record Limited(
      String domain,
      String statsRule,
      boolean statsRuleFromValues,
      boolean shadowMode,
      boolean quotaMode,
      List<Policy> policies,
      Map<String, Object> metadata)
      implements DescriptorPlan {

    @Override
    public List<String> replaces() {
      if (policies.size() == 1) {
        return policies.get(0).replaces();
      }
      return policies.stream().flatMap(p -> p.replaces().stream()).toList();
    }

    @Override
    public DescriptorPlan without(Set<String> replaced) {
      List<Policy> kept =
          policies.stream()
              .filter(p -> p.ruleName().isEmpty() || !replaced.contains(p.ruleName()))
              .toList();
      if (kept.size() == policies.size()) {
        return this;
      }
      return kept.isEmpty()
          ? new NoLimit()
          : new Limited(
              domain, statsRule, statsRuleFromValues, shadowMode, quotaMode, kept, metadata);
    }
  }

  /**
   * One policy of a counted descriptor.
   *
   * @param ruleName the policy's name, also {@code current_limit.name}
   * @param policyName the policy's name in the IETF {@code RateLimit-Policy} header: {@code
   *     ruleName} when set, else a stable name derived from the rule's path
   * @param label the rule as operators name it: its YAML {@code name} when it has one, else the
   *     descriptor path it matched ({@code limit_override.k1.k2} for a limit override)
   * @param requestsPerUnit the limit
   * @param unit the window unit (the base unit of a multiplied window)
   * @param replaces names of rules this policy drops
   * @param request the native request counting it
   */
  record Policy(
      String ruleName,
      String policyName,
      String label,
      long requestsPerUnit,
      Unit unit,
      List<String> replaces,
      RateLimitRequest request) {}
}
