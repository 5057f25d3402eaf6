package dev.weir.core.engine;

import dev.weir.core.model.Algorithm;
import dev.weir.core.model.Status;

/**
 * Token bucket state: Gubernator's window of {@code duration} that starts at the first hit.
 *
 * @param status the stored status (OVER_LIMIT sticks once a hit found the bucket empty)
 * @param limit the limit of the last request
 * @param duration the duration of the last request (milliseconds or Gregorian code)
 * @param remaining tokens left in this window
 * @param createdAt epoch millisecond at which the window started
 * @param expireAt epoch millisecond from which the window is over: one after Gubernator's {@code
 *     expire_at}, which the engine reports as {@code reset_time} (see {@link
 *     RateLimitEngine#tokenBucketResetTime})
 */
public record TokenBucketState(
    Status status, long limit, long duration, long remaining, long createdAt, long expireAt)
    implements BucketState {

  @Override
  public Algorithm algorithm() {
    return Algorithm.TOKEN_BUCKET;
  }
}
