package dev.weir.core.quota;

import dev.weir.core.model.Algorithm;
import dev.weir.core.model.RateLimitRequest;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An owner's record of one quota bucket: the proxies sharing it, what each asked for lately and the
 * share each holds. Pure: every method takes the time; the caller serializes access.
 *
 * <p>Design: the shares of the live proxies never add up to more than the fleet's rate at the time
 * they were set. A reporting proxy gets its fair share ({@link QuotaAllocator#split}) or what the
 * others' shares leave, whichever is less; when that leaves it short by more than {@link
 * #SHORTFALL} of its fair share, the proxies above their fair share are lowered to it first and
 * those changes are returned as pushes. A proxy left short is marked constrained and raised (a
 * push) once shares free up, at a later report or a {@link #rebalance}. A proxy is forgotten when
 * its stream ends or {@link #expiryIntervals} report intervals after its last report, when its
 * assignment has expired at the proxy too.
 */
final class BucketLedger {

  /** The shortfall, as a fraction of a reporter's fair share, that lowers the other proxies. */
  static final double SHORTFALL = 0.05;

  /** The fraction below its fair share at which a constrained proxy is raised. */
  static final double RAISE_BELOW = 0.95;

  private final String key;
  private final long epoch;
  private final long expiryIntervals;
  private final Map<String, Client> clients = new LinkedHashMap<>();
  private RateLimitRequest rule;
  private long sequence;

  /** Creates the record of bucket {@code key}, made at {@code epoch} (epoch ms). */
  BucketLedger(String key, long epoch, long expiryIntervals) {
    this.key = key;
    this.epoch = epoch;
    this.expiryIntervals = expiryIntervals;
  }

  /** One proxy's state. */
  static final class Client {
    final String id;
    double demand = Double.NaN;
    double smoothed = Double.NaN;
    long milliRate;
    long burst;
    long lastReport;
    long expiresAt;
    long intervalMillis;
    boolean constrained;

    Client(String id) {
      this.id = id;
    }
  }

  /** Returns the bucket's latest rule. */
  RateLimitRequest rule() {
    return rule;
  }

  /** Returns the proxies sharing the bucket. */
  List<Client> clients() {
    return List.copyOf(clients.values());
  }

  /** Returns whether no proxy shares the bucket. */
  boolean isEmpty() {
    return clients.isEmpty();
  }

  /**
   * Forgets the proxies whose last report is more than their expiry ago; returns whether any went.
   */
  boolean expire(long now) {
    return clients.values().removeIf(c -> c.expiresAt <= now);
  }

  /** Forgets {@code client}; returns whether it was known. */
  boolean release(String client) {
    return clients.remove(client) != null;
  }

  /**
   * Records a report of {@code usage} at {@code now}: the rule, the proxy's demand (kept when the
   * report covers no time) and when it reported. Returns the proxy.
   */
  Client record(QuotaUsage usage, long now) {
    rule = usage.rule();
    Client c = clients.computeIfAbsent(usage.client(), Client::new);
    if (usage.elapsedMillis() > 0) {
      double measured = (usage.allowed() + usage.denied()) * 1000.0 / usage.elapsedMillis();
      c.smoothed = QuotaAllocator.smooth(c.smoothed, measured);
      c.demand = QuotaAllocator.demand(c.smoothed, measured);
      c.lastReport = now;
    } else if (c.lastReport == 0) {
      c.lastReport = now;
    }
    c.intervalMillis = usage.intervalMillis();
    c.expiresAt = now + expiryIntervals * usage.intervalMillis();
    return c;
  }

  /**
   * Returns the requests the proxies other than {@code except} (null: all) may have admitted since
   * their last reports: each one's rate, capped by what it asks for, over the time since (at most
   * its expiry).
   */
  double unreported(Client except, long now) {
    double sum = 0;
    for (Client c : clients.values()) {
      if (c == except) {
        continue;
      }
      double rate = c.milliRate / 1000.0;
      if (!Double.isNaN(c.demand)) {
        rate = Math.min(rate, c.demand * QuotaAllocator.HEADROOM);
      }
      long age = Math.min(Math.max(0, now - c.lastReport), expiryIntervals * c.intervalMillis);
      sum += rate * age / 1000.0;
    }
    return sum;
  }

  /**
   * Returns the requests the proxies' token buckets may hold now: the burst of every proxy that
   * asks for less than its rate (its bucket fills up) or whose demand is unknown; a proxy asking
   * for its rate or more keeps its bucket empty.
   */
  double bursts() {
    double sum = 0;
    for (Client c : clients.values()) {
      if (Double.isNaN(c.demand) || c.demand < c.milliRate / 1000.0) {
        sum += c.burst;
      }
    }
    return sum;
  }

  /**
   * Sets the share of {@code reporter} for a fleet rate of {@code rate} requests/s and returns the
   * pushes to other proxies it took (lowered to make room, or constrained ones raised).
   */
  List<QuotaPush> allocate(Client reporter, double rate, long spentUntil) {
    List<Client> live = new ArrayList<>(clients.values());
    long[] fair = fairMilli(live, rate);
    long total = (long) Math.floor(rate * 1000);
    int q = live.indexOf(reporter);
    List<QuotaPush> pushes = new ArrayList<>();
    long fairQ = fair[q];
    long available = total - othersMilli(live, q);
    if (fairQ - available > SHORTFALL * fairQ) {
      for (int i = 0; i < live.size(); i++) {
        Client c = live.get(i);
        if (i != q && c.milliRate > fair[i]) {
          set(c, fair[i]);
          pushes.add(push(c, spentUntil));
        }
      }
      available = total - othersMilli(live, q);
    }
    long granted = Math.max(0, Math.min(fairQ, available));
    set(reporter, granted);
    reporter.constrained = granted < RAISE_BELOW * fairQ;
    long spare = total - othersMilli(live, -1);
    for (int i = 0; i < live.size() && spare > 0; i++) {
      Client c = live.get(i);
      if (i != q && c.constrained && c.milliRate < fair[i]) {
        long raised = Math.min(fair[i], c.milliRate + spare);
        spare -= raised - c.milliRate;
        set(c, raised);
        c.constrained = raised < RAISE_BELOW * fair[i];
        pushes.add(push(c, spentUntil));
      }
    }
    return pushes;
  }

  /**
   * Sets every proxy's share for a fleet rate of {@code rate}: those above their fair share are
   * lowered to it, then those below it by more than 5 % are raised as far as the rate allows;
   * returns the pushes of every change.
   */
  List<QuotaPush> rebalance(double rate, long spentUntil) {
    List<Client> live = new ArrayList<>(clients.values());
    long[] fair = fairMilli(live, rate);
    long total = (long) Math.floor(rate * 1000);
    List<QuotaPush> pushes = new ArrayList<>();
    boolean[] changed = new boolean[live.size()];
    for (int i = 0; i < live.size(); i++) {
      Client c = live.get(i);
      if (c.milliRate > fair[i]) {
        set(c, fair[i]);
        changed[i] = true;
      }
    }
    long spare = total - othersMilli(live, -1);
    for (int i = 0; i < live.size() && spare > 0; i++) {
      Client c = live.get(i);
      if (c.milliRate < RAISE_BELOW * fair[i]) {
        long raised = Math.min(fair[i], c.milliRate + spare);
        spare -= raised - c.milliRate;
        set(c, raised);
        changed[i] = true;
      }
      c.constrained = c.milliRate < RAISE_BELOW * fair[i];
    }
    for (int i = 0; i < live.size(); i++) {
      if (changed[i]) {
        pushes.add(push(live.get(i), spentUntil));
      }
    }
    return pushes;
  }

  /** Returns the current share of {@code client}, numbered as the next one. */
  QuotaShare share(Client client, long spentUntil) {
    return new QuotaShare(
        client.milliRate,
        client.burst,
        client.milliRate == 0 ? spentUntil : 0,
        epoch,
        ++sequence,
        "");
  }

  private QuotaPush push(Client c, long spentUntil) {
    return new QuotaPush(key, c.id, share(c, spentUntil));
  }

  private void set(Client c, long milliRate) {
    c.milliRate = milliRate;
    long burst = QuotaAllocator.burst(milliRate, rule == null ? 0 : rule.duration());
    c.burst = Math.min(burst, burstCap());
  }

  /**
   * Returns the most burst one proxy's share may hold: for a {@code leaky_bucket}, the rule's burst
   * (its limit when 0) split evenly across the live proxies, rounded down, at least 1, as Envoy
   * starts a token bucket full; otherwise no cap.
   */
  private long burstCap() {
    if (rule == null || rule.algorithm() != Algorithm.LEAKY_BUCKET.number()) {
      return Long.MAX_VALUE;
    }
    return Math.max(1, rule.effectiveBurst() / Math.max(1, clients.size()));
  }

  private static long othersMilli(List<Client> live, int except) {
    long sum = 0;
    for (int i = 0; i < live.size(); i++) {
      if (i != except) {
        sum += live.get(i).milliRate;
      }
    }
    return sum;
  }

  private static long[] fairMilli(List<Client> live, double rate) {
    int n = live.size();
    double equal = n == 0 ? 0 : rate / n;
    double[] wants = new double[n];
    for (int i = 0; i < n; i++) {
      wants[i] = QuotaAllocator.want(live.get(i).demand, equal);
    }
    double[] shares = QuotaAllocator.split(rate, wants);
    long[] out = new long[n];
    for (int i = 0; i < n; i++) {
      out[i] = (long) Math.floor(shares[i] * 1000);
    }
    return out;
  }
}
