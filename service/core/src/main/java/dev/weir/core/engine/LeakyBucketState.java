package dev.weir.core.engine;

import dev.weir.core.model.Algorithm;

/**
 * Leaky bucket state. The fraction of a token leaked since the last whole token is carried by {@code
 * updatedAt}, which only advances by whole tokens' worth of time.
 *
 * @param limit tokens leaked back per {@code duration}
 * @param duration milliseconds (or Gregorian code) over which {@code limit} tokens leak back
 * @param burst the bucket's capacity
 * @param remaining whole tokens available
 * @param updatedAt epoch millisecond up to which leaked tokens have been credited
 * @param expireAt epoch millisecond at which an idle bucket is dropped
 */
public record LeakyBucketState(
    long limit, long duration, long burst, long remaining, long updatedAt, long expireAt)
    implements BucketState {

  @Override
  public Algorithm algorithm() {
    return Algorithm.LEAKY_BUCKET;
  }
}
