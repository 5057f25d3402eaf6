package dev.weir.core.cluster.handoff;

import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.FixedWindowState;
import dev.weir.core.engine.LeakyBucketState;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.engine.SlidingWindowState;
import dev.weir.core.engine.TokenBucketState;

/**
 * The rule that joins a handed-over bucket with the receiver's own copy of it: keep the more consumed
 * state, so a hand-off never grants hits that either side had already taken.
 *
 * <ul>
 *   <li>different algorithms: the receiver's state stays (it reflects the latest requests);
 *   <li>token bucket: the state with fewer {@code remaining} tokens (ties keep the receiver's);
 *   <li>leaky bucket: the state with fewer tokens available at {@code now} (a leaky state's {@code
 *       remaining} counts tokens at its own {@code updatedAt}); ties keep the receiver's;
 *   <li>fixed window: the later window; in the same window the larger count;
 *   <li>sliding window: the later window; in the same window each count is the larger of the two.
 * </ul>
 */
public final class BucketMerge {

  private BucketMerge() {}

  /**
   * Returns the state to keep when {@code existing} (may be null) meets {@code incoming} at epoch
   * millisecond {@code now}.
   */
  public static BucketState moreConsumed(BucketState existing, BucketState incoming, long now) {
    if (existing == null) {
      return incoming;
    }
    if (existing instanceof TokenBucketState e && incoming instanceof TokenBucketState i) {
      return i.remaining() < e.remaining() ? i : e;
    }
    if (existing instanceof LeakyBucketState e && incoming instanceof LeakyBucketState i) {
      return RateLimitEngine.leakyBucketAvailable(i, now)
              < RateLimitEngine.leakyBucketAvailable(e, now)
          ? i
          : e;
    }
    if (existing instanceof FixedWindowState e && incoming instanceof FixedWindowState i) {
      if (i.windowStart() != e.windowStart()) {
        return i.windowStart() > e.windowStart() ? i : e;
      }
      return i.count() > e.count() ? i : e;
    }
    if (existing instanceof SlidingWindowState e && incoming instanceof SlidingWindowState i) {
      if (i.windowStart() != e.windowStart()) {
        return i.windowStart() > e.windowStart() ? i : e;
      }
      return new SlidingWindowState(
          e.limit(),
          e.duration(),
          e.windowStart(),
          Math.max(e.previousCount(), i.previousCount()),
          Math.max(e.currentCount(), i.currentCount()),
          Math.max(e.expireAt(), i.expireAt()));
    }
    return existing;
  }
}
