package dev.weir.core.engine;

import static dev.weir.core.engine.SaturatingMath.add;
import static dev.weir.core.engine.SaturatingMath.sub;

import dev.weir.core.model.Behavior;
import dev.weir.core.model.GregorianInterval;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;

/**
 * Gubernator's token bucket: a window of {@code duration} that starts at the bucket's first request
 * and holds {@code limit} tokens; hits never extend it.
 *
 * <p>Design: the steps and their order are Gubernator 2.19's (see docs/engine.md). Gubernator keeps
 * an item while {@code expire_at >= now} and reports {@code expire_at} as {@code reset_time}; the
 * state's {@link TokenBucketState#expireAt()} is "void from", so it holds {@code reset_time + 1}
 * and {@link #resetTime} converts back. With {@code DURATION_IS_GREGORIAN} the window ends with the
 * calendar interval and {@code reset_time} is its last millisecond, as in Gubernator.
 */
final class TokenBucket {

  private final Calendars calendars;

  TokenBucket(Calendars calendars) {
    this.calendars = calendars;
  }

  /** Applies {@code r} at {@code now} to {@code live}, a state that has not expired, or null. */
  Decision apply(BucketState live, RateLimitRequest r, long now) {
    if (!(live instanceof TokenBucketState t)) {
      return create(r, now);
    }
    if (r.has(Behavior.RESET_REMAINING)) {
      return new Decision(null, RateLimitResponse.of(Status.UNDER_LIMIT, r.limit(), r.limit(), 0));
    }
    long limit = r.limit();
    long hits = r.hits();
    long remaining = t.remaining();
    long createdAt = t.createdAt();
    long resetTime = resetTime(t);
    if (t.limit() != limit) {
      remaining = Math.max(0, add(remaining, sub(limit, t.limit())));
    }
    // Gubernator builds its answer before the duration step: a renewed window is answered with
    // the remaining of the window it replaces unless hits are taken from the new one.
    long answered = remaining;
    if (t.duration() != r.duration()) {
      resetTime = windowEnd(r, createdAt, now);
      if (resetTime <= now) {
        createdAt = now;
        resetTime = windowEnd(r, now, now);
        remaining = limit;
      }
    }
    Status stored = t.status();
    if (hits == 0) {
      return decide(stored, stored, r, remaining, answered, createdAt, resetTime);
    }
    if (answered == 0 && hits > 0) {
      return decide(Status.OVER_LIMIT, Status.OVER_LIMIT, r, remaining, 0, createdAt, resetTime);
    }
    if (hits == remaining) {
      return decide(stored, stored, r, 0, 0, createdAt, resetTime);
    }
    if (hits > remaining) {
      if (r.has(Behavior.DRAIN_OVER_LIMIT)) {
        return decide(stored, Status.OVER_LIMIT, r, 0, 0, createdAt, resetTime);
      }
      return decide(stored, Status.OVER_LIMIT, r, remaining, answered, createdAt, resetTime);
    }
    long left = sub(remaining, hits);
    return decide(stored, stored, r, left, left, createdAt, resetTime);
  }

  /**
   * Returns the {@code reset_time} Gubernator reports for {@code state}: the window's last live ms.
   */
  static long resetTime(TokenBucketState state) {
    long expireAt = state.expireAt();
    return expireAt == Long.MAX_VALUE ? Long.MAX_VALUE : expireAt - 1;
  }

  /**
   * Returns the {@link TokenBucketState#expireAt()} of a window whose last live ms is {@code
   * resetTime}.
   */
  static long expireAt(long resetTime) {
    return add(resetTime, 1);
  }

  private Decision create(RateLimitRequest r, long now) {
    long resetTime = windowEnd(r, now, now);
    Status status = Status.UNDER_LIMIT;
    long remaining = sub(r.limit(), r.hits());
    if (r.hits() > r.limit()) {
      status = Status.OVER_LIMIT;
      remaining = r.limit();
    }
    TokenBucketState next =
        new TokenBucketState(
            Status.UNDER_LIMIT, r.limit(), r.duration(), remaining, now, expireAt(resetTime));
    return new Decision(next, RateLimitResponse.of(status, r.limit(), remaining, resetTime));
  }

  private long windowEnd(RateLimitRequest r, long createdAt, long now) {
    if (r.has(Behavior.DURATION_IS_GREGORIAN)) {
      GregorianInterval interval = RequestValidator.intervalOf(r.duration());
      return calendars.of(r).end(interval, now) - 1;
    }
    return add(createdAt, r.duration());
  }

  private static Decision decide(
      Status storedStatus,
      Status answered,
      RateLimitRequest r,
      long storedRemaining,
      long answeredRemaining,
      long createdAt,
      long resetTime) {
    TokenBucketState next =
        new TokenBucketState(
            storedStatus, r.limit(), r.duration(), storedRemaining, createdAt, expireAt(resetTime));
    return new Decision(
        next, RateLimitResponse.of(answered, r.limit(), answeredRemaining, resetTime));
  }
}
