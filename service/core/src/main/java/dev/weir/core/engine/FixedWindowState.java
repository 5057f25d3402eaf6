package dev.weir.core.engine;

import dev.weir.core.model.Algorithm;

/**
 * Fixed window state: a counter for the epoch-aligned window {@code [windowStart, windowStart +
 * duration)}.
 *
 * @param limit the limit of the last request
 * @param duration window length in milliseconds
 * @param windowStart epoch millisecond at which the window starts (a multiple of {@code duration})
 * @param count hits counted in the window, including refused ones
 * @param expireAt epoch millisecond at which the window ends
 */
public record FixedWindowState(
    long limit, long duration, long windowStart, long count, long expireAt) implements BucketState {

  @Override
  public Algorithm algorithm() {
    return Algorithm.FIXED_WINDOW;
  }
}
