package dev.weir.envoy.rlqs;

import dev.weir.core.quota.QuotaAllocator;
import dev.weir.core.quota.QuotaShare;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.BucketId;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse.BucketAction;
import io.envoyproxy.envoy.type.v3.RateLimitStrategy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * One bucket of one proxy's stream: its plan, its recent demand and, for a limited bucket, the
 * stream's counters of its policies, whose shares make its assignment. Not thread-safe: its stream
 * serializes access; pure.
 */
final class StreamBucket {

  final BucketId id;
  final String name;
  /** The bytes the bucket counts for among those its node's streams hold: {@link HeldBucketBytes}. */
  final long bytes;
  BucketPlan plan;
  long lastReportNanos;
  long lastUsageNanos;
  BucketAction lastSent;
  private List<StreamCounter> counters = List.of();
  private double smoothed = Double.NaN;
  private double demand = Double.NaN;

  /**
   * Creates a bucket first reported at {@code nanos} (monotonic), counted as in use then, counting
   * for {@code bytes} among those its node's streams hold.
   */
  StreamBucket(BucketId id, String name, BucketPlan plan, long nanos, long bytes) {
    this.id = id;
    this.name = name;
    this.bytes = bytes;
    this.plan = plan;
    this.lastUsageNanos = nanos;
  }

  /**
   * Returns whether the bucket has gone {@code idleNanos} or longer without a report of requests
   * (allowed or denied) at {@code nanos}.
   */
  boolean idle(long nanos, long idleNanos) {
    return nanos - lastUsageNanos >= idleNanos;
  }

  /** Takes {@code next} as the bucket's plan, without counters until the stream attaches them. */
  void replan(BucketPlan next) {
    this.plan = next;
    this.counters = List.of();
  }

  /** Returns the counters of the bucket's policies, in policy order. */
  List<StreamCounter> counters() {
    return counters;
  }

  /** Takes {@code counters}, one per policy of the bucket's plan, in policy order. */
  void counters(List<StreamCounter> counters) {
    this.counters = List.copyOf(counters);
  }

  /**
   * Records a report at {@code nanos} (monotonic) of {@code requests} (allowed and denied) over
   * {@code elapsedMillis}: the bucket was in use then unless {@code requests} is 0, and its demand,
   * as an owner measures a proxy's ({@link QuotaAllocator#demand}); a report covering no time
   * leaves the demand as it was.
   */
  void measure(long requests, long elapsedMillis, long nanos) {
    if (requests > 0) {
      lastUsageNanos = nanos;
    }
    if (elapsedMillis <= 0) {
      return;
    }
    double measured = requests * 1000.0 / elapsedMillis;
    smoothed = QuotaAllocator.smooth(smoothed, measured);
    double next = QuotaAllocator.demand(smoothed, measured);
    if (Double.compare(next, demand) != 0) {
      demand = next;
      for (StreamCounter c : counters) {
        c.demandChanged();
      }
    }
  }

  /** Returns the bucket's recent demand in requests per second, NaN while unknown. */
  double demand() {
    return demand;
  }

  /**
   * Returns the bucket's assignment from its part of each counter's share, empty while a counter
   * has no share or an error share, or the bucket has no counters; {@code ALLOW_ALL} for a bucket
   * planned in shadow mode, whatever its shares.
   */
  Optional<BucketAction> limitedAction(Duration ttl) {
    if (plan instanceof BucketPlan.Limited limited && limited.shadow()) {
      return Optional.of(Assignments.blanket(id, RateLimitStrategy.BlanketRule.ALLOW_ALL, ttl));
    }
    if (counters.isEmpty()) {
      return Optional.empty();
    }
    List<QuotaShare> parts = new ArrayList<>(counters.size());
    for (StreamCounter c : counters) {
      QuotaShare part = c.partOf(this);
      if (part == null) {
        return Optional.empty();
      }
      parts.add(part);
    }
    return Optional.of(Assignments.share(id, parts, ttl));
  }
}
