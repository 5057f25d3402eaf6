package dev.weir.core.engine;

import static dev.weir.core.engine.SaturatingMath.add;
import static dev.weir.core.engine.SaturatingMath.sub;

import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;

/**
 * Weir's fixed window, counted like envoyproxy/ratelimit: every hit is added to the window's count,
 * refused or not, and a request is over the limit when the count after adding exceeds {@code
 * limit}. Windows are aligned to the Unix epoch (or are calendar intervals); {@code reset_time} is
 * the first millisecond of the next window.
 */
final class FixedWindow {

  private final Calendars calendars;

  FixedWindow(Calendars calendars) {
    this.calendars = calendars;
  }

  /** Applies {@code r} at {@code now} to {@code live}, a state that has not expired, or null. */
  Decision apply(BucketState live, RateLimitRequest r, long now) {
    FixedWindowState prior =
        live instanceof FixedWindowState f && f.duration() == r.duration() ? f : null;
    long at = prior == null ? now : Math.max(now, prior.windowStart());
    Window window = Window.containing(r, at, calendars);
    long count = 0;
    if (prior != null
        && prior.windowStart() == window.start()
        && prior.expireAt() == window.end()
        && !r.has(Behavior.RESET_REMAINING)) {
      count = prior.count();
    }
    long hits = r.hits();
    long sum = count + hits;
    boolean overflowed = ((count ^ sum) & (hits ^ sum)) < 0;
    long limit = r.limit();
    boolean over = overflowed ? hits > 0 : sum > limit;
    count = add(count, hits);
    Status status = over ? Status.OVER_LIMIT : Status.UNDER_LIMIT;
    long remaining = Math.max(0, sub(limit, count));
    FixedWindowState next =
        new FixedWindowState(limit, r.duration(), window.start(), count, window.end());
    return new Decision(next, RateLimitResponse.of(status, limit, remaining, window.end()));
  }
}
