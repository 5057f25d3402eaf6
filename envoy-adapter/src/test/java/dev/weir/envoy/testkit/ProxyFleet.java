package dev.weir.envoy.testkit;

import dev.weir.core.time.Clock;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.BucketId;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

/**
 * A fleet of {@link SimulatedProxy}s sending requests into one bucket at given rates, and the
 * accounting of what they admitted per window of the bucket's limit.
 *
 * <p>Each proxy has a demand: requests per second, evenly spaced or at random, from a start to a
 * stop time (relative to the fleet's start; a proxy stops, closing its stream, at its stop time).
 * {@link #step} moves the fleet by one step of the driver: every running proxy runs its timers,
 * then decides the requests of that step. Windows are aligned to the epoch, as a {@code
 * fixed_window} rule's are. A proxy is <em>within its fair share</em> in a window when it asked for
 * no more than the limit divided by the number of proxies that asked for anything in that window.
 */
public final class ProxyFleet {

  /**
   * What one proxy asks for.
   *
   * @param perSecond requests per second
   * @param fromMillis when it starts, after the fleet's start
   * @param toMillis when it stops (closing its stream), after the fleet's start
   * @param random whether requests arrive at random (a Poisson process) rather than evenly spaced
   */
  public record Demand(double perSecond, long fromMillis, long toMillis, boolean random) {

    /** A demand of evenly spaced requests from {@code fromMillis} to {@code toMillis}. */
    public Demand(double perSecond, long fromMillis, long toMillis) {
      this(perSecond, fromMillis, toMillis, false);
    }

    /** An evenly spaced demand lasting the whole run. */
    public static Demand steady(double perSecond) {
      return new Demand(perSecond, 0, Long.MAX_VALUE, false);
    }

    /** Returns this demand with requests arriving at random, at the same average rate. */
    public Demand atRandom() {
      return new Demand(perSecond, fromMillis, toMillis, true);
    }
  }

  /**
   * The outcome of one window.
   *
   * @param start the window's start, epoch milliseconds
   * @param limit the bucket's limit
   * @param asked requests asked per proxy
   * @param admitted requests admitted per proxy
   */
  public record Window(long start, long limit, long[] asked, long[] admitted) {

    /** Returns the requests admitted in the window by every proxy. */
    public long totalAdmitted() {
      long sum = 0;
      for (long a : admitted) {
        sum += a;
      }
      return sum;
    }

    /** Returns the requests asked in the window by every proxy. */
    public long totalAsked() {
      long sum = 0;
      for (long a : asked) {
        sum += a;
      }
      return sum;
    }

    /** Returns the total admitted divided by the limit. */
    public double ratio() {
      return limit == 0 ? 0 : (double) totalAdmitted() / limit;
    }

    /**
     * Returns the share of requests denied, all together, to the proxies that asked for no more
     * than an equal split of the limit among the proxies that asked for anything; 0 when there is
     * none.
     */
    public double deniedWithinFairShare() {
      double fair = fairShare();
      long asks = 0;
      long denials = 0;
      for (int i = 0; i < asked.length; i++) {
        if (asked[i] > 0 && asked[i] <= fair) {
          asks += asked[i];
          denials += asked[i] - admitted[i];
        }
      }
      return asks == 0 ? 0 : (double) denials / asks;
    }

    private double fairShare() {
      int active = 0;
      for (long a : asked) {
        active += a > 0 ? 1 : 0;
      }
      return active == 0 ? 0 : (double) limit / active;
    }

    /**
     * Returns the largest share of requests denied to a proxy that asked for no more than an equal
     * split of the limit among the proxies that asked for anything; 0 when there is none.
     */
    public double worstDeniedWithinFairShare() {
      double fair = fairShare();
      double worst = 0;
      for (int i = 0; i < asked.length; i++) {
        if (asked[i] > 0 && asked[i] <= fair) {
          worst = Math.max(worst, (double) (asked[i] - admitted[i]) / asked[i]);
        }
      }
      return worst;
    }
  }

  private final Clock clock;
  private final BucketId bucket;
  private final long windowMillis;
  private final long limit;
  private final List<SimulatedProxy> proxies = new ArrayList<>();
  private final List<Demand> demands = new ArrayList<>();
  private final List<Double> owed = new ArrayList<>();
  private final Map<Long, long[][]> windows = new TreeMap<>();
  private final Random random = new Random(42);
  private long startMillis = -1;
  private long lastStepMillis;

  /** Creates a fleet sending into {@code bucket}, whose limit is {@code limit} per window. */
  public ProxyFleet(Clock clock, BucketId bucket, long limit, Duration window) {
    this.clock = clock;
    this.bucket = bucket;
    this.limit = limit;
    this.windowMillis = window.toMillis();
  }

  /** Adds {@code proxy} with {@code demand}. */
  public ProxyFleet add(SimulatedProxy proxy, Demand demand) {
    proxies.add(proxy);
    demands.add(demand);
    owed.add(0.0);
    return this;
  }

  /** Returns the proxies in the order they were added. */
  public List<SimulatedProxy> proxies() {
    return List.copyOf(proxies);
  }

  /** Returns the report messages every proxy sent. */
  public long reportsSent() {
    return proxies.stream().mapToLong(SimulatedProxy::reportsSent).sum();
  }

  /** Returns the response messages every proxy received. */
  public long responsesReceived() {
    return proxies.stream().mapToLong(SimulatedProxy::responsesReceived).sum();
  }

  /**
   * Moves the fleet to the clock's current time: runs every proxy's timers, stops those whose
   * demand ended, then decides the requests each running proxy asks for since the last step.
   */
  public void step() {
    long now = clock.wallMillis();
    if (startMillis < 0) {
      startMillis = now;
      lastStepMillis = now;
    }
    long since = now - startMillis;
    double seconds = (now - lastStepMillis) / 1000.0;
    lastStepMillis = now;
    for (int i = 0; i < proxies.size(); i++) {
      SimulatedProxy proxy = proxies.get(i);
      Demand d = demands.get(i);
      if (since < d.fromMillis()) {
        continue;
      }
      if (since >= d.toMillis()) {
        proxy.stop();
        continue;
      }
      proxy.tick();
      long n;
      if (d.random()) {
        n = poisson(d.perSecond() * seconds);
      } else {
        double due = owed.get(i) + d.perSecond() * seconds;
        n = (long) Math.floor(due);
        owed.set(i, due - n);
      }
      for (long k = 0; k < n; k++) {
        boolean admitted = proxy.request(bucket);
        long[][] w = windows.computeIfAbsent(windowOf(now), s -> new long[2][proxies.size()]);
        w[0][i]++;
        if (admitted) {
          w[1][i]++;
        }
      }
    }
  }

  /** Returns every complete window seen so far (the one under way is left out). */
  public List<Window> windows() {
    long current = windowOf(clock.wallMillis());
    List<Window> out = new ArrayList<>();
    windows.forEach(
        (start, w) -> {
          if (start < current) {
            out.add(new Window(start, limit, w[0].clone(), w[1].clone()));
          }
        });
    return out;
  }

  /** Prints one line per complete window under {@code title}. */
  public void print(String title, PrintStream out) {
    out.println(title);
    out.println(
        "  window  asked  admitted  limit  admitted/limit  denied within fair share: worst  all");
    int n = 0;
    for (Window w : windows()) {
      out.printf(
          Locale.ROOT,
          "  %6d %6d %9d %6d %15.3f %31.1f%% %5.2f%%%n",
          n++,
          w.totalAsked(),
          w.totalAdmitted(),
          w.limit(),
          w.ratio(),
          100 * w.worstDeniedWithinFairShare(),
          100 * w.deniedWithinFairShare());
    }
  }

  // Knuth's method; the fleet's steps keep the mean small.
  private long poisson(double mean) {
    double limit = Math.exp(-mean);
    double product = random.nextDouble();
    long n = 0;
    while (product > limit) {
      product *= random.nextDouble();
      n++;
    }
    return n;
  }

  private long windowOf(long millis) {
    return millis - Math.floorMod(millis, windowMillis);
  }
}
