package dev.weir.core.quota;

import dev.weir.core.model.Algorithm;

/**
 * What a quota bucket can still admit, as its owner sees it at {@code now}: the inputs of {@link
 * #fleetRate()}, the rate every proxy of the bucket together may admit from now on.
 *
 * @param algorithm the bucket's algorithm
 * @param limit the bucket's limit per window
 * @param windowMillis the bucket's window (for the leaky bucket: the time {@code limit} leaks in)
 * @param remaining what the bucket admits now, with every reported request counted
 * @param resetTime for {@code fixed_window} and {@code token_bucket}: when the window ends
 * @param remainingAtHorizon what the bucket would admit at {@code now + horizonMillis} if nothing
 *     more were taken (used for {@code sliding_window})
 * @param now the owner's time, epoch milliseconds
 * @param horizonMillis the report interval: how long a share is planned for
 * @param unreported requests the proxies may have admitted since their last reports
 * @param bursts requests the proxies' token buckets may hold now
 */
public record QuotaBudget(
    Algorithm algorithm,
    long limit,
    long windowMillis,
    long remaining,
    long resetTime,
    long remainingAtHorizon,
    long now,
    long horizonMillis,
    double unreported,
    double bursts) {

  /**
   * Returns the rate, in requests per second, every proxy together may admit from now on: for a
   * window no longer than the horizon, the limit's own pace; for {@code fixed_window} and {@code
   * token_bucket}, what remains of the window (less what the proxies may hold unreported or in
   * their bursts) spread over the time left, and in the window's last horizon at most the limit's
   * pace; for {@code leaky_bucket}, what it admits now and what leaks back over the horizon (less
   * the same) divided by it, as a bucket whose burst is below what leaks in the horizon still
   * admits its limit's pace when taken evenly; for {@code sliding_window}, what the bucket admits
   * over the horizon (less the same) divided by it. Never negative.
   */
  public double fleetRate() {
    double pace = limit * 1000.0 / Math.max(1, windowMillis);
    if (windowMillis <= horizonMillis) {
      return pace;
    }
    return switch (algorithm) {
      case FIXED_WINDOW, TOKEN_BUCKET -> {
        double available = Math.max(0, remaining - unreported - bursts);
        long left = Math.max(1, resetTime - now);
        double rate = available * 1000.0 / left;
        yield left < horizonMillis ? Math.min(rate, pace) : rate;
      }
      case LEAKY_BUCKET -> {
        double leaked = pace * horizonMillis / 1000.0;
        double available = Math.max(0, remaining + leaked - unreported - bursts);
        yield available * 1000.0 / Math.max(1, horizonMillis);
      }
      case SLIDING_WINDOW -> {
        double available = Math.max(0, remainingAtHorizon - unreported - bursts);
        yield available * 1000.0 / Math.max(1, horizonMillis);
      }
    };
  }

  /**
   * Returns whether the bucket is spent until its window ends: a {@code fixed_window} or {@code
   * token_bucket} longer than the horizon with nothing left to admit.
   */
  public boolean spent() {
    return windowMillis > horizonMillis
        && (algorithm == Algorithm.FIXED_WINDOW || algorithm == Algorithm.TOKEN_BUCKET)
        && remaining <= 0;
  }
}
