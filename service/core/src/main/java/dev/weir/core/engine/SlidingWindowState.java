package dev.weir.core.engine;

import dev.weir.core.model.Algorithm;

/**
 * Sliding window state: the admitted count of the current epoch-aligned window and of the one before.
 *
 * @param limit the limit of the last request
 * @param duration window length in milliseconds
 * @param windowStart epoch millisecond at which the current window starts
 * @param previousCount hits admitted in {@code [windowStart - duration, windowStart)}
 * @param currentCount hits admitted in {@code [windowStart, windowStart + duration)}
 * @param expireAt epoch millisecond from which both counts have slid out
 */
public record SlidingWindowState(
    long limit,
    long duration,
    long windowStart,
    long previousCount,
    long currentCount,
    long expireAt)
    implements BucketState {

  @Override
  public Algorithm algorithm() {
    return Algorithm.SLIDING_WINDOW;
  }
}
