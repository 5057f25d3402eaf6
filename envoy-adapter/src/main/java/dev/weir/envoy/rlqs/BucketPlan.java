package dev.weir.envoy.rlqs;

import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.model.RateLimitRequest;
import java.util.List;

/** What the descriptor config says of one RLQS bucket. */
public sealed interface BucketPlan {

  /** No rule matches the bucket, or its domain is unknown. */
  record Unmatched() implements BucketPlan {}

  /** The bucket matches an {@code unlimited} rule. */
  record Unlimited() implements BucketPlan {}

  /**
   * The bucket cannot come from Envoy's configuration (too many or empty entries).
   *
   * @param reason what is wrong with the bucket, naming the setting it breaks
   * @param counted the refusal counter's reason ({@code too_many_entries}), or null when the
   *     refusal is not counted (empty keys or values)
   */
  record Refused(String reason, RefusalReason counted) implements BucketPlan {}

  /**
   * The bucket matches a rule with a limit: one counter per policy of the rule.
   *
   * @param policies each policy's counter and rule, as a native request (hits and time unset)
   * @param shadow whether the rule (or the whole service) is in shadow mode: the bucket's usage is
   *     counted, but it is assigned {@code ALLOW_ALL}
   */
  record Limited(List<RateLimitRequest> policies, boolean shadow) implements BucketPlan {
    /** Creates a plan, copying {@code policies}. */
    public Limited {
      policies = List.copyOf(policies);
    }

    /** Creates a plan out of shadow mode. */
    public Limited(List<RateLimitRequest> policies) {
      this(policies, false);
    }
  }
}
