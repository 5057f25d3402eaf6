package dev.weir.core.engine;

import static dev.weir.core.engine.SaturatingMath.add;
import static dev.weir.core.engine.SaturatingMath.sub;

import dev.weir.core.model.Behavior;
import dev.weir.core.model.GregorianInterval;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;

/**
 * Gubernator's leaky bucket: {@code limit} tokens leak back per {@code duration}, up to {@code
 * burst} (0 means {@code limit}); an idle bucket is dropped {@code duration} after its last
 * non-zero hit, and no later than {@code duration} after a query that changed the duration.
 *
 * <p>Design: Gubernator keeps {@code remaining} as a float and divides elapsed time by a float
 * rate. Weir keeps whole numbers only. Tokens leak on a grid anchored at {@code updatedAt}: at time
 * {@code t} the bucket holds {@code remaining + floor((t - updatedAt) * limit / duration)} tokens
 * (capped at {@code burst}). {@code updatedAt} moves forward only by whole leak periods, {@code
 * duration / gcd(duration, limit)} ms, in which exactly {@code limit / gcd} tokens leak, so no
 * fraction of a token is ever rounded away or invented, however often the bucket is read. The
 * tokens leaked after {@code updatedAt} are subtracted from the stored {@code remaining}, which is
 * therefore "tokens available at {@code updatedAt}"; with a whole number of ms per token (the usual
 * configuration) the period is one token and the stored {@code remaining} is exactly what the last
 * answer reported. A bucket that reaches {@code burst} restarts its grid at {@code now}, as
 * Gubernator resets {@code updated_at} and drops the fraction.
 */
final class LeakyBucket {

  private final Calendars calendars;

  /** The last rate computed, reused while requests keep the same limit and period. */
  private Rate lastRate = new Rate(1, 1, 1, 1);

  LeakyBucket(Calendars calendars) {
    this.calendars = calendars;
  }

  /** Applies {@code r} at {@code now} to {@code live}, a state that has not expired, or null. */
  Decision apply(BucketState live, RateLimitRequest r, long now) {
    long limit = r.limit();
    long burst = r.effectiveBurst();
    long hits = r.hits();
    long period;
    long lifetimeEnd;
    if (r.has(Behavior.DURATION_IS_GREGORIAN)) {
      GregorianInterval interval = RequestValidator.intervalOf(r.duration());
      GregorianCalendarMath calendar = calendars.of(r);
      period = calendar.length(interval, now);
      lifetimeEnd = calendar.end(interval, now);
    } else {
      period = r.duration();
      lifetimeEnd = add(add(now, period), 1);
    }
    if (!(live instanceof LeakyBucketState b)) {
      return create(r, now, burst, period, lifetimeEnd);
    }

    long remaining = b.remaining();
    boolean refilled = false;
    if (r.has(Behavior.RESET_REMAINING)) {
      remaining = burst;
      refilled = true;
    }
    if (b.burst() != burst && burst > remaining) {
      remaining = burst;
      refilled = true;
    }
    // A request stamped before the last hit never brings the end of a bucket of the same duration
    // nearer: the bucket would be dropped early and start over full. A query with another duration
    // keeps the bucket's end but never past the end of a bucket of that duration. A plain duration
    // equal to a Gregorian code may follow that code (the state does not say), so it counts as
    // another duration.
    boolean sameDuration =
        b.duration() == r.duration()
            && (r.has(Behavior.DURATION_IS_GREGORIAN)
                || RequestValidator.intervalOf(r.duration()) == null);
    long expireAt;
    if (sameDuration) {
      expireAt = hits != 0 ? Math.max(b.expireAt(), lifetimeEnd) : b.expireAt();
    } else {
      expireAt = hits != 0 ? lifetimeEnd : Math.min(b.expireAt(), lifetimeEnd);
    }

    long anchor = b.updatedAt();
    long elapsed = sub(now, anchor);
    long leaked = 0;
    long credited = 0;
    // A new rate applies from now: the time since the anchor leaks at the rate the bucket had.
    // When that time is less than a whole token at both rates the anchor stays and the time leaks
    // later at the new rate: no token was handed out for it, and the new rate leaks under one from
    // it. A stored duration that may be a Gregorian code (the state does not say) is no rate in ms,
    // so that time leaks at the new rate.
    boolean rateChanged =
        !r.has(Behavior.DURATION_IS_GREGORIAN)
            && (b.limit() != limit || b.duration() != r.duration())
            && b.limit() > 0
            && b.duration() > 0
            && RequestValidator.intervalOf(b.duration()) == null;
    long leakLimit = rateChanged ? b.limit() : limit;
    long leakPeriod = rateChanged ? b.duration() : period;
    if (elapsed > 0
        && leakLimit > 0
        && leakPeriod > 0
        && SaturatingMath.productAtLeast(elapsed, leakLimit, leakPeriod)) {
      leaked = SaturatingMath.mulDivFloor(elapsed, leakLimit, leakPeriod);
      if (rateChanged) {
        anchor = now;
        credited = leaked;
      } else {
        Rate rate = rate(limit, period);
        long periods = elapsed / rate.periodMillis();
        anchor = add(anchor, periods * rate.periodMillis());
        credited = SaturatingMath.mul(periods, rate.tokensPerPeriod());
      }
    } else if (rateChanged
        && elapsed > 0
        && limit > 0
        && period > 0
        && SaturatingMath.productAtLeast(elapsed, limit, period)) {
      anchor = now;
    }
    long available = add(remaining, leaked);
    long pending = sub(leaked, credited);
    if (available > burst) {
      available = burst;
      if (leaked > 0) {
        anchor = now;
        pending = 0;
        credited = leaked;
      }
    }
    // A request stamped before the last decision may see less leaked than the state already
    // counts on; it never sees fewer than no tokens, and a refund (negative hits) goes back in
    // whole, on top of that deficit.
    if (available < 0 && hits >= 0) {
      available = 0;
    }

    Status status = Status.UNDER_LIMIT;
    long after = available;
    long resetFrom = available;
    if (available == 0 && hits > 0) {
      status = Status.OVER_LIMIT;
    } else if (available == hits) {
      after = 0;
      resetFrom = 0;
    } else if (hits > 0 && hits > available) {
      status = Status.OVER_LIMIT;
      if (r.has(Behavior.DRAIN_OVER_LIMIT)) {
        after = 0;
      }
    } else if (hits != 0) {
      after = sub(available, hits);
      resetFrom = Math.max(0, after);
    }
    long resetTime = resetTime(now, limit, period, resetFrom);
    long stored = sub(after, pending);
    if (hits >= 0 && !refilled) {
      // No request without negative hits adds tokens: at the new anchor the bucket holds at most
      // what the state held there (a request stamped earlier than the last one, drained, would
      // otherwise store the tokens the last one had already counted as leaked).
      stored = Math.min(stored, add(remaining, credited));
    }
    LeakyBucketState next =
        new LeakyBucketState(limit, r.duration(), burst, stored, anchor, expireAt);
    return new Decision(next, RateLimitResponse.of(status, limit, Math.max(0, after), resetTime));
  }

  private static Decision create(
      RateLimitRequest r, long now, long burst, long period, long lifetimeEnd) {
    long limit = r.limit();
    Status status = Status.UNDER_LIMIT;
    long remaining = sub(burst, r.hits());
    if (r.hits() > burst) {
      status = Status.OVER_LIMIT;
      remaining = 0;
    }
    LeakyBucketState next =
        new LeakyBucketState(limit, r.duration(), burst, remaining, now, lifetimeEnd);
    return new Decision(
        next,
        RateLimitResponse.of(status, limit, remaining, resetTime(now, limit, period, remaining)));
  }

  /**
   * Returns the whole tokens {@code state} holds at {@code now} when {@code period} ms leak {@code
   * limit} tokens: {@code min(burst, remaining + floor((now - updatedAt) * limit / period))}, the
   * same arithmetic as {@link #apply}; {@code remaining} itself when {@code now} is not after {@code
   * updatedAt}.
   */
  static long available(LeakyBucketState state, long period, long now) {
    long elapsed = sub(now, state.updatedAt());
    long available = state.remaining();
    if (elapsed > 0
        && state.limit() > 0
        && period > 0
        && SaturatingMath.productAtLeast(elapsed, state.limit(), period)) {
      available = add(available, SaturatingMath.mulDivFloor(elapsed, state.limit(), period));
    }
    return Math.min(available, state.burst());
  }

  /**
   * Returns when {@code remaining} would be back to {@code limit}: Gubernator's {@code now + (limit
   * - remaining) * trunc(period / limit)} while a token takes at least 1 ms, otherwise the exact
   * time rounded up (Gubernator answers {@code now} there); never before {@code now} (Gubernator
   * answers a time in the past when {@code remaining > limit}).
   */
  static long resetTime(long now, long limit, long period, long remaining) {
    long missing = sub(limit, remaining);
    if (missing <= 0 || limit == 0) {
      return now;
    }
    long msPerToken = period < limit ? 0 : period / limit;
    if (msPerToken > 0) {
      return add(now, SaturatingMath.mul(missing, msPerToken));
    }
    return add(now, SaturatingMath.mulDivCeil(missing, period, limit));
  }

  private Rate rate(long limit, long period) {
    Rate r = lastRate;
    if (r.limit() != limit || r.period() != period) {
      long g = SaturatingMath.gcd(period, limit);
      r = new Rate(limit, period, period / g, limit / g);
      lastRate = r;
    }
    return r;
  }

  /**
   * A leak rate reduced to whole periods: every {@code periodMillis} exactly {@code
   * tokensPerPeriod} tokens leak. Immutable, so sharing it between threads through a plain field is
   * safe.
   */
  private record Rate(long limit, long period, long periodMillis, long tokensPerPeriod) {}
}
