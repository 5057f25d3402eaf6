package dev.weir.core.engine;

import dev.weir.core.model.Algorithm;

/**
 * Leaky bucket state. The fraction of a token leaked since the last whole token is carried by
 * {@code updatedAt}, which only advances by whole tokens' worth of time: whole leak periods of
 * {@code duration / gcd(duration, limit)} ms, in each of which exactly {@code limit / gcd} tokens
 * leak. The tokens available at time {@code t} are {@code min(burst, remaining + floor((t -
 * updatedAt) * limit / duration))}.
 *
 * @param limit tokens leaked back per {@code duration}
 * @param duration milliseconds (or Gregorian code) over which {@code limit} tokens leak back
 * @param burst the bucket's capacity
 * @param remaining whole tokens available at {@code updatedAt}; equal to the last reported {@code
 *     remaining} whenever a token takes a whole number of milliseconds, and may be negative
 *     otherwise
 * @param updatedAt epoch millisecond up to which leaked tokens have been credited to {@code
 *     remaining}
 * @param expireAt epoch millisecond from which an idle bucket is dropped: {@code duration + 1}
 *     after its last non-zero hit (Gubernator keeps it while {@code expire_at >= now})
 */
public record LeakyBucketState(
    long limit, long duration, long burst, long remaining, long updatedAt, long expireAt)
    implements BucketState {

  @Override
  public Algorithm algorithm() {
    return Algorithm.LEAKY_BUCKET;
  }
}
