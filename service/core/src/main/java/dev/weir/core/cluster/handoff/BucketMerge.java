package dev.weir.core.cluster.handoff;

import static dev.weir.core.engine.SaturatingMath.add;
import static dev.weir.core.engine.SaturatingMath.sub;

import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.FixedWindowState;
import dev.weir.core.engine.LeakyBucketState;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.engine.SlidingWindowState;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.Status;

/**
 * The rules that join a handed-over bucket with the receiver's own copy of it.
 *
 * <p>{@link #addConsumedSince} applies when the receiver already merged an earlier snapshot of the
 * same bucket from the same sender: the receiver's state then descends from that snapshot, so it
 * takes on only the hits the sender recorded since it, and both sides' hits count. Otherwise {@link
 * #moreConsumed} keeps the more consumed state, so a hand-off never grants hits that either side had
 * already taken (the receiver's copy may be a GLOBAL copy of the sender's own state, which adding
 * would count twice):
 *
 * <ul>
 *   <li>different algorithms: the receiver's state stays (it reflects the latest requests);
 *   <li>token bucket: the state with more tokens used, {@code limit - remaining} (the engine keeps
 *       the usage when a limit changes; ties keep the receiver's);
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
      return sub(i.limit(), i.remaining()) > sub(e.limit(), e.remaining()) ? i : e;
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

  /**
   * Returns {@code existing} with the hits the sender recorded between its snapshots {@code previous}
   * and {@code incoming} added at epoch millisecond {@code now}, or null when the three states do not
   * describe the same window of the same algorithm (the caller then falls back to {@link
   * #moreConsumed}). A null {@code existing} (the receiver's copy expired or was dropped) yields
   * {@code incoming}. Token bucket: {@code remaining} drops by the sender's drop; leaky bucket: the
   * tokens available at {@code now} drop by the sender's drop, credited at {@code now}; fixed and
   * sliding window: each count grows by the sender's growth. Nothing drops below zero, and the
   * arithmetic saturates (a refunded state's counts may lie anywhere in a long's range). The
   * sender's hits are counted as {@code limit - remaining}, so a limit changed between the
   * snapshots is not taken for hits; a leaky bucket whose limit, duration or burst differ between
   * the states yields null.
   */
  public static BucketState addConsumedSince(
      BucketState existing, BucketState previous, BucketState incoming, long now) {
    if (existing == null) {
      return incoming;
    }
    if (existing instanceof TokenBucketState e
        && previous instanceof TokenBucketState p
        && incoming instanceof TokenBucketState i) {
      if (e.createdAt() != p.createdAt() || i.createdAt() != p.createdAt()) {
        return null;
      }
      long used = Math.max(0, sub(sub(i.limit(), i.remaining()), sub(p.limit(), p.remaining())));
      return new TokenBucketState(
          i.status() == Status.OVER_LIMIT ? Status.OVER_LIMIT : e.status(),
          e.limit(),
          e.duration(),
          Math.max(0, sub(e.remaining(), used)),
          e.createdAt(),
          e.expireAt());
    }
    if (existing instanceof LeakyBucketState e
        && previous instanceof LeakyBucketState p
        && incoming instanceof LeakyBucketState i) {
      if (!sameShape(e, p) || !sameShape(i, p)) {
        return null;
      }
      long used =
          Math.max(
              0,
              sub(
                  RateLimitEngine.leakyBucketAvailable(p, now),
                  RateLimitEngine.leakyBucketAvailable(i, now)));
      return new LeakyBucketState(
          e.limit(),
          e.duration(),
          e.burst(),
          Math.max(0, sub(RateLimitEngine.leakyBucketAvailable(e, now), used)),
          now,
          Math.max(e.expireAt(), i.expireAt()));
    }
    if (existing instanceof FixedWindowState e
        && previous instanceof FixedWindowState p
        && incoming instanceof FixedWindowState i) {
      if (e.windowStart() != p.windowStart() || i.windowStart() != p.windowStart()) {
        return null;
      }
      return new FixedWindowState(
          e.limit(),
          e.duration(),
          e.windowStart(),
          grown(e.count(), p.count(), i.count()),
          e.expireAt());
    }
    if (existing instanceof SlidingWindowState e
        && previous instanceof SlidingWindowState p
        && incoming instanceof SlidingWindowState i) {
      if (e.windowStart() != p.windowStart() || i.windowStart() != p.windowStart()) {
        return null;
      }
      return new SlidingWindowState(
          e.limit(),
          e.duration(),
          e.windowStart(),
          grown(e.previousCount(), p.previousCount(), i.previousCount()),
          grown(e.currentCount(), p.currentCount(), i.currentCount()),
          Math.max(e.expireAt(), i.expireAt()));
    }
    return null;
  }

  /** Returns {@code count} grown by what {@code before} grew to {@code after}, saturating. */
  private static long grown(long count, long before, long after) {
    return add(count, Math.max(0, sub(after, before)));
  }

  private static boolean sameShape(LeakyBucketState a, LeakyBucketState b) {
    return a.limit() == b.limit() && a.duration() == b.duration() && a.burst() == b.burst();
  }
}
