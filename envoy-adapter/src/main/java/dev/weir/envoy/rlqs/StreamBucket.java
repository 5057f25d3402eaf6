package dev.weir.envoy.rlqs;

import dev.weir.core.quota.QuotaShare;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.BucketId;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse.BucketAction;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * One bucket of one proxy's stream: its plan and, for a limited bucket, the latest share of each
 * policy. Not thread-safe: its stream serializes access.
 */
final class StreamBucket {

  final BucketId id;
  final String name;
  BucketPlan plan;
  long lastReportNanos;
  BucketAction lastSent;
  private QuotaShare[] shares;

  StreamBucket(BucketId id, String name, BucketPlan plan) {
    this.id = id;
    this.name = name;
    replan(plan);
  }

  /** Takes {@code next} as the bucket's plan and forgets its shares. */
  void replan(BucketPlan next) {
    this.plan = next;
    this.shares = new QuotaShare[next instanceof BucketPlan.Limited l ? l.policies().size() : 0];
  }

  /** Returns the index of the policy whose counter key is {@code key}, or -1. */
  int policyIndex(String key) {
    if (plan instanceof BucketPlan.Limited l) {
      for (int i = 0; i < l.policies().size(); i++) {
        if (l.policies().get(i).hashKey().equals(key)) {
          return i;
        }
      }
    }
    return -1;
  }

  /**
   * Takes {@code share} for policy {@code index}: an answer to a report always, unless an owner's
   * later share of the same record arrived first; a push only when it is later than the share held;
   * an error (the owner did not answer) never in place of a share, so that the proxy keeps being
   * assigned its last share, and limited, while the owner is paused or unreachable. Returns whether
   * it was taken.
   */
  boolean accept(int index, QuotaShare share, boolean answer) {
    if (index < 0 || index >= shares.length) {
      return false;
    }
    QuotaShare held = shares[index];
    if (share.isError() && held != null && !held.isError()) {
      return false;
    }
    if (held != null && !held.isError()) {
      boolean newer = share.isNewerThan(held);
      boolean sameRecord = share.epoch() == held.epoch();
      if (answer ? sameRecord && !newer : !newer) {
        return false;
      }
    }
    shares[index] = share;
    return true;
  }

  /**
   * Returns the bucket's assignment from its shares, empty while a policy has no share or an error
   * share.
   */
  Optional<BucketAction> limitedAction(Duration ttl) {
    List<QuotaShare> all = new ArrayList<>(shares.length);
    for (QuotaShare s : shares) {
      if (s == null || s.isError()) {
        return Optional.empty();
      }
      all.add(s);
    }
    return Optional.of(Assignments.share(id, all, ttl));
  }

  /** Returns whether every policy has a share without an error. */
  boolean complete() {
    return Arrays.stream(shares).allMatch(s -> s != null && !s.isError());
  }
}
