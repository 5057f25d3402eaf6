package dev.weir.envoy.rlqs;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.quota.QuotaAllocator;
import dev.weir.core.quota.QuotaShare;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * One counter of one proxy's stream: the policy it counts, the stream's buckets counted on it, and
 * the proxy's latest share of it. Several buckets share a counter when a {@code share_threshold}
 * wildcard gives their different values one counter key: the owner sees one proxy (the stream
 * reports their usage summed) and the proxy's one share is split among them ({@link #partOf}). Not
 * thread-safe: its stream serializes access; pure.
 */
final class StreamCounter {

  final Set<StreamBucket> buckets = new LinkedHashSet<>();
  RateLimitRequest policy;
  long lastReportNanos;
  private QuotaShare share;

  StreamCounter(RateLimitRequest policy) {
    this.policy = policy;
  }

  /** Returns the counter's key. */
  String key() {
    return policy.hashKey();
  }

  /** Takes {@code next} as the counter's policy; a changed policy forgets the share. */
  void repolicy(RateLimitRequest next) {
    if (!next.equals(policy)) {
      policy = next;
      share = null;
    }
  }

  /**
   * Takes {@code share}: an answer to a report always, unless an owner's later share of the same
   * record arrived first; a push only when it is later than the share held; an error (the owner did
   * not answer) never in place of a share, so that the proxy keeps being assigned its last share,
   * and limited, while the owner is paused or unreachable. Returns whether it was taken.
   */
  boolean accept(QuotaShare share, boolean answer) {
    QuotaShare held = this.share;
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
    this.share = share;
    return true;
  }

  /**
   * Returns {@code bucket}'s part of the proxy's share, or null while there is no share or an error
   * share. A bucket alone on the counter gets the whole share. Buckets sharing it split its rate as
   * the owner splits a bucket's rate among proxies ({@link QuotaAllocator#split}): each asks for its
   * recent demand × {@link QuotaAllocator#HEADROOM}, at least {@link QuotaAllocator#QUIET_FLOOR} of
   * an equal split, an equal split while its demand is unknown; the parts never add up to more than
   * the share. A part's burst is {@link QuotaAllocator#burst} of its rate.
   */
  QuotaShare partOf(StreamBucket bucket) {
    if (share == null || share.isError()) {
      return null;
    }
    if (buckets.size() <= 1) {
      return share;
    }
    List<StreamBucket> all = new ArrayList<>(buckets);
    int index = all.indexOf(bucket);
    if (index < 0) {
      return null;
    }
    double rate = share.ratePerSecond();
    double equal = rate / all.size();
    double[] wants = new double[all.size()];
    for (int i = 0; i < wants.length; i++) {
      wants[i] = QuotaAllocator.want(all.get(i).demand(), equal);
    }
    double[] parts = QuotaAllocator.split(rate, wants);
    long milliRate = Math.min(share.milliRate(), (long) Math.floor(parts[index] * 1000));
    return new QuotaShare(
        milliRate,
        Math.min(share.burst(), QuotaAllocator.burst(milliRate)),
        share.spentUntil(),
        share.epoch(),
        share.sequence(),
        "");
  }
}
