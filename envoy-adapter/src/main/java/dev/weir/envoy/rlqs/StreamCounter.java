package dev.weir.envoy.rlqs;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.quota.QuotaAllocator;
import dev.weir.core.quota.QuotaShare;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One counter of one proxy's stream: the policy it counts, the stream's buckets counted on it, and
 * the proxy's latest share of it. Several buckets share a counter when a {@code share_threshold}
 * wildcard gives their different values one counter key: the owner sees one proxy (the stream
 * reports their usage summed) and the proxy's one share is split among them ({@link #partOf}). Not
 * thread-safe: its stream serializes access; pure.
 */
final class StreamCounter {

  private final Set<StreamBucket> buckets = new LinkedHashSet<>();
  private final Set<StreamBucket> bucketsView = Collections.unmodifiableSet(buckets);
  RateLimitRequest policy;
  private QuotaShare share;
  private Map<StreamBucket, QuotaShare> parts;

  /**
   * The bucket holding the one token of a share below one request a minute, or null; kept across
   * shares so that the token does not move, and Envoy start a full token bucket, every report.
   */
  private StreamBucket holder;

  /** How many times the share was split among the buckets; for tests. */
  int splits;

  StreamCounter(RateLimitRequest policy) {
    this.policy = policy;
  }

  /** Returns the stream's buckets counted on this counter, in the order they came; read-only. */
  Set<StreamBucket> buckets() {
    return bucketsView;
  }

  /** Counts {@code bucket} on this counter. */
  void add(StreamBucket bucket) {
    if (buckets.add(bucket)) {
      parts = null;
    }
  }

  /** Stops counting {@code bucket} on this counter. */
  void remove(StreamBucket bucket) {
    if (buckets.remove(bucket)) {
      parts = null;
      if (bucket == holder) {
        holder = null;
      }
    }
  }

  /** Notes that a bucket's demand changed, so the share is split anew when next asked. */
  void demandChanged() {
    parts = null;
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
      parts = null;
    }
  }

  /**
   * Takes {@code share}: an answer to a report always, unless an owner's later share of the same
   * record arrived first; a push only when it is later than the share held; an error (the owner did
   * not answer) in place of a share only when the share held is a spent window that ended by
   * {@code nowMillis} (epoch ms), so that the proxy keeps being assigned its last share, and
   * limited, while the owner is paused or unreachable, but is not denied beyond the window's end.
   * Returns whether it was taken.
   */
  boolean accept(QuotaShare share, boolean answer, long nowMillis) {
    QuotaShare held = this.share;
    if (share.isError() && held != null && !held.isError() && !spentBefore(held, nowMillis)) {
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
    this.parts = null;
    return true;
  }

  /** Returns whether {@code share} denies a spent window that ended by {@code nowMillis}. */
  private static boolean spentBefore(QuotaShare share, long nowMillis) {
    return share.milliRate() == 0 && share.spentUntil() > 0 && share.spentUntil() <= nowMillis;
  }

  /**
   * Returns {@code bucket}'s part of the proxy's share, or null while there is no share or an error
   * share. A bucket alone on the counter gets the whole share. Buckets sharing it split its rate as
   * the owner splits a bucket's rate among proxies ({@link QuotaAllocator#split}): each asks for its
   * recent demand × {@link QuotaAllocator#HEADROOM}, at least {@link QuotaAllocator#QUIET_FLOOR} of
   * an equal split, an equal split while its demand is unknown. The share's whole {@code
   * tokens_per_fill} ({@link Assignments#tokensPerFill}, one token for a share below one request
   * a minute, which its one holder fills at the share's own rate; see {@link #holderOf}) and its
   * burst are then handed out
   * by largest remainder ({@link #apportion}), so the parts add up to exactly the share's tokens per
   * fill and their bursts to the share's burst; a part holding tokens but no burst gives its tokens
   * to the part with the most burst, so every part that holds tokens can admit and a part without
   * tokens is {@code DENY_ALL}. The parts are computed once per change of the share, the buckets or
   * a bucket's demand, and reused for every bucket until the next.
   */
  QuotaShare partOf(StreamBucket bucket) {
    if (share == null || share.isError()) {
      return null;
    }
    if (buckets.size() <= 1) {
      return share;
    }
    if (parts == null) {
      parts = split();
    }
    return parts.get(bucket);
  }

  private Map<StreamBucket, QuotaShare> split() {
    splits++;
    List<StreamBucket> all = new ArrayList<>(buckets);
    int n = all.size();
    double rate = share.ratePerSecond();
    double equal = rate / n;
    double[] wants = new double[n];
    for (int i = 0; i < n; i++) {
      wants[i] = QuotaAllocator.want(all.get(i).demand(), equal);
    }
    double[] rates = QuotaAllocator.split(rate, wants);
    double total = 0;
    for (double r : rates) {
      total += r;
    }
    long fill =
        share.milliRate() > 0 ? Math.max(1, Assignments.tokensPerFill(share.milliRate())) : 0;
    int turn = (int) Math.floorMod(share.sequence(), (long) n);
    double[] exact = new double[n];
    for (int i = 0; i < n; i++) {
      exact[i] = total > 0 ? fill * (rates[i] / total) : 0;
    }
    long[] tokens;
    if (fill == 1 && Assignments.tokensPerFill(share.milliRate()) == 0) {
      tokens = new long[n];
      tokens[holderOf(all, wants, rates, equal)] = 1;
    } else {
      tokens = apportion(exact, fill, turn);
    }
    long burstTotal = fill > 0 ? Math.max(0, share.burst()) : 0;
    for (int i = 0; i < n; i++) {
      exact[i] = fill > 0 ? burstTotal * ((double) tokens[i] / fill) : 0;
    }
    long[] bursts = apportion(exact, burstTotal, turn);
    int most = 0;
    for (int i = 1; i < n; i++) {
      if (bursts[i] > bursts[most]) {
        most = i;
      }
    }
    for (int i = 0; i < n; i++) {
      if (tokens[i] > 0 && bursts[i] == 0 && bursts[most] > 0) {
        tokens[most] += tokens[i];
        tokens[i] = 0;
      }
    }
    Map<StreamBucket, QuotaShare> out = new HashMap<>(n * 2);
    for (int i = 0; i < n; i++) {
      long milliRate = Math.min(share.milliRate(), milliRateOf(tokens[i]));
      out.put(
          all.get(i),
          new QuotaShare(
              milliRate,
              tokens[i] > 0 ? bursts[i] : 0,
              share.spentUntil(),
              share.epoch(),
              share.sequence(),
              ""));
    }
    return out;
  }

  /**
   * Returns the index in {@code all} of the bucket to hold the one token of a share below one
   * request a minute, and notes it as the {@link #holder}: the bucket that held it last while it is
   * still on the counter and still asks for more than {@link QuotaAllocator#QUIET_FLOOR} of an
   * equal split (or no other bucket does), else the first bucket, in the order they came, of the
   * largest part by demand. The token does not take turns as shares arrive: a bucket given it
   * anew starts a full token bucket, so moving it every report would admit a burst every report.
   */
  private int holderOf(List<StreamBucket> all, double[] wants, double[] rates, double equal) {
    double floor = QuotaAllocator.QUIET_FLOOR * equal;
    int best = 0;
    boolean anyAsking = false;
    int held = -1;
    for (int i = 0; i < all.size(); i++) {
      if (rates[i] > rates[best]) {
        best = i;
      }
      if (all.get(i) == holder) {
        held = i;
      } else if (wants[i] > floor) {
        anyAsking = true;
      }
    }
    int chosen = held >= 0 && (wants[held] > floor || !anyAsking) ? held : best;
    holder = all.get(chosen);
    return chosen;
  }

  /** Returns the least rate (thousandths per second) whose tokens per fill is {@code tokens}. */
  private static long milliRateOf(long tokens) {
    long seconds = Assignments.FILL_INTERVAL.toSeconds();
    return (tokens * 1000 + seconds - 1) / seconds;
  }

  /**
   * Hands out {@code total} whole units to parts of {@code exact} size (adding up to {@code total}
   * or about) by largest remainder: each gets its size rounded down, and the units left go one each
   * to the largest remainders; equal remainders go in turn from position {@code turn}, so parts of
   * equal size beyond the units take turns as {@code turn} moves. The result adds up to {@code
   * total}.
   */
  static long[] apportion(double[] exact, long total, int turn) {
    int n = exact.length;
    long[] out = new long[n];
    long given = 0;
    for (int i = 0; i < n; i++) {
      out[i] = (long) Math.floor(Math.max(0, exact[i]));
      given += out[i];
    }
    Integer[] order = new Integer[n];
    for (int i = 0; i < n; i++) {
      order[i] = i;
    }
    Arrays.sort(
        order,
        Comparator.<Integer>comparingDouble(i -> -(Math.max(0, exact[i]) - out[i]))
            .thenComparingInt(i -> Math.floorMod(i - turn, n)));
    for (int k = 0; given < total && n > 0; k = (k + 1) % n) {
      out[order[k]]++;
      given++;
    }
    for (int k = n - 1; given > total; k = (k + n - 1) % n) {
      if (out[order[k]] > 0) {
        out[order[k]]--;
        given--;
      }
    }
    return out;
  }
}
