package dev.weir.core.engine;

import static dev.weir.core.engine.SaturatingMath.add;
import static dev.weir.core.engine.SaturatingMath.sub;

import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;

/**
 * Weir's sliding window: the two-window weighted counter. At {@code now} inside window {@code
 * [start, end)} the estimate is {@code ceil(previousCount * (end - now) / (end - start)) +
 * currentCount}, the previous window's count weighted by the share of it still inside the sliding
 * window that ends at {@code now}. Hits are admitted only while {@code estimate + hits <= limit};
 * refused hits are not counted.
 *
 * <p>Design: rounding the weighted part up makes the integer test exact: {@code estimate + hits <=
 * limit} holds exactly when the real-valued estimate plus hits is within the limit. The product is
 * taken at 128 bits ({@link SaturatingMath#mulDivCeil}), so no count or duration overflows. {@code
 * reset_time} is the end of the current window; capacity returns gradually before it as the
 * previous window's weight decays. The state expires at the end of the next window, when both
 * counts have slid out.
 */
final class SlidingWindow {

  private final Calendars calendars;

  SlidingWindow(Calendars calendars) {
    this.calendars = calendars;
  }

  /** Applies {@code r} at {@code now} to {@code live}, a state that has not expired, or null. */
  Decision apply(BucketState live, RateLimitRequest r, long now) {
    SlidingWindowState prior =
        live instanceof SlidingWindowState s && s.duration() == r.duration() ? s : null;
    long at = prior == null ? now : Math.max(now, prior.windowStart());
    Window window = Window.containing(r, at, calendars);
    long previous = 0;
    long current = 0;
    if (prior != null && !r.has(Behavior.RESET_REMAINING)) {
      if (prior.windowStart() == window.start()) {
        previous = prior.previousCount();
        current = prior.currentCount();
      } else if (prior.windowStart() == window.previousStart()) {
        previous = prior.currentCount();
      }
    }
    long estimate = add(weighted(previous, window.end() - at, window.length()), current);
    long limit = r.limit();
    long room = sub(limit, estimate);
    long hits = r.hits();
    Status status = Status.UNDER_LIMIT;
    long remaining;
    if (hits == 0) {
      status = room < 0 ? Status.OVER_LIMIT : Status.UNDER_LIMIT;
      remaining = Math.max(0, room);
    } else if (hits < 0 || hits <= room) {
      current = add(current, hits);
      remaining = Math.max(0, sub(room, hits));
    } else {
      status = Status.OVER_LIMIT;
      remaining = Math.max(0, room);
      if (r.has(Behavior.DRAIN_OVER_LIMIT) && room > 0) {
        current = add(current, room);
        remaining = 0;
      }
    }
    SlidingWindowState next =
        new SlidingWindowState(
            limit, r.duration(), window.start(), previous, current, window.nextEnd());
    return new Decision(next, RateLimitResponse.of(status, limit, remaining, window.end()));
  }

  /** Returns {@code ceil(count * part / whole)} for any sign of {@code count}. */
  private static long weighted(long count, long part, long whole) {
    if (count == 0 || part == 0) {
      return 0;
    }
    if (count > 0) {
      return SaturatingMath.mulDivCeil(count, part, whole);
    }
    long magnitude = count == Long.MIN_VALUE ? Long.MAX_VALUE : -count;
    return -SaturatingMath.mulDivFloor(magnitude, part, whole);
  }
}
