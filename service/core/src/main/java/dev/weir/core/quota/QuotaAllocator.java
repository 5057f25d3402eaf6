package dev.weir.core.quota;

import java.util.Arrays;

/**
 * The arithmetic of quota shares, pure: what a proxy asks for, how a fleet's rate is split among
 * its proxies, and the burst that goes with a rate.
 *
 * <p>A proxy's demand is the larger of its latest report's rate and its smoothed rate ({@link
 * #smooth}), so an interval that happened to be quiet does not cut the share of a proxy whose
 * requests arrive at random. A proxy asks for its demand times {@link #HEADROOM}, so it can grow
 * between reports; a proxy whose demand is unknown (its first report) asks for an equal split, and
 * a quiet one for at least {@link #QUIET_FLOOR} of an equal split, so it can start. The fleet's
 * rate is split max-min fairly: every proxy asking for less than an equal split of what the others
 * leave gets all it asks, the busier ones share the rest evenly; what nobody asks for is handed out
 * in proportion to what each asked, so the shares always add up to the fleet's rate when anyone
 * asks.
 */
public final class QuotaAllocator {

  /** The factor a proxy's recent demand is multiplied by to make what it asks for. */
  public static final double HEADROOM = 1.25;

  /** The fraction of an equal split a quiet proxy (no recent requests) asks for. */
  public static final double QUIET_FLOOR = 0.1;

  /** The weight of a proxy's latest report in its smoothed demand. */
  public static final double SMOOTHING = 0.25;

  /** How many seconds of its rate a proxy may admit at once. */
  public static final double BURST_SECONDS = 5.0;

  private QuotaAllocator() {}

  /**
   * Returns a proxy's smoothed demand after a report {@code measured} requests/s: the {@code
   * previous} smoothed demand moved {@link #SMOOTHING} of the way towards it; {@code measured} when
   * there was none (NaN).
   */
  public static double smooth(double previous, double measured) {
    return Double.isNaN(previous) ? measured : previous + SMOOTHING * (measured - previous);
  }

  /**
   * Returns a proxy's demand, in requests per second, from its latest report ({@code measured})
   * and its {@code smoothed} demand: the larger, so a proxy growing is seen at once and one whose
   * requests arrive at random is not judged by an interval that happened to be quiet.
   */
  public static double demand(double smoothed, double measured) {
    return Double.isNaN(smoothed) ? measured : Math.max(smoothed, measured);
  }

  /**
   * Returns what a proxy asks for, in requests per second: {@code demand × HEADROOM}, at least
   * {@code QUIET_FLOOR × equalShare}; {@code equalShare} when its demand is unknown (NaN).
   */
  public static double want(double demand, double equalShare) {
    if (Double.isNaN(demand)) {
      return equalShare;
    }
    return Math.max(demand * HEADROOM, QUIET_FLOOR * equalShare);
  }

  /**
   * Splits {@code rate} among proxies asking for {@code wants}: max-min fair when they ask for more
   * than {@code rate} in all, else each gets what it asks plus the unasked rest in proportion to
   * what it asked (evenly when nobody asks for anything). The result adds up to {@code rate}.
   */
  public static double[] split(double rate, double[] wants) {
    int n = wants.length;
    double[] shares = new double[n];
    if (n == 0 || rate <= 0) {
      return shares;
    }
    double asked = 0;
    for (double w : wants) {
      asked += Math.max(0, w);
    }
    if (asked <= rate) {
      for (int i = 0; i < n; i++) {
        double w = Math.max(0, wants[i]);
        shares[i] = asked == 0 ? rate / n : w + (rate - asked) * w / asked;
      }
      return shares;
    }
    Integer[] order = new Integer[n];
    for (int i = 0; i < n; i++) {
      order[i] = i;
    }
    Arrays.sort(order, (a, b) -> Double.compare(wants[a], wants[b]));
    double left = rate;
    for (int k = 0; k < n; k++) {
      int i = order[k];
      double level = left / (n - k);
      double w = Math.max(0, wants[i]);
      if (w <= level) {
        shares[i] = w;
        left -= w;
      } else {
        for (int j = k; j < n; j++) {
          shares[order[j]] = level;
        }
        return shares;
      }
    }
    return shares;
  }

  /**
   * Returns the burst that goes with {@code milliRate} (thousandths of a request per second):
   * {@link #BURST_SECONDS} of the rate, rounded up, at least 1; 0 for a rate of 0.
   */
  public static long burst(long milliRate) {
    if (milliRate <= 0) {
      return 0;
    }
    return Math.max(1, (long) Math.ceil(milliRate * BURST_SECONDS / 1000.0));
  }

  /**
   * Returns the burst that goes with {@code milliRate} in a bucket whose window is {@code
   * windowMillis}: {@link #burst(long)}, but no more than the rate admits in one window (rounded
   * down, at least 1), so that a proxy's token bucket, which starts full, never holds more than its
   * share of one window; a window of 0 or less does not cap it.
   */
  public static long burst(long milliRate, long windowMillis) {
    long burst = burst(milliRate);
    if (burst <= 1 || windowMillis <= 0) {
      return burst;
    }
    long perWindow = (long) Math.floor(milliRate / 1000.0 * windowMillis / 1000.0);
    return Math.max(1, Math.min(burst, perWindow));
  }
}
