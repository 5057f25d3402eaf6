package dev.weir.core.engine;

import static dev.weir.core.engine.SaturatingMath.add;
import static dev.weir.core.engine.SaturatingMath.sub;

import dev.weir.core.model.Behavior;
import dev.weir.core.model.GregorianInterval;
import dev.weir.core.model.RateLimitRequest;

/**
 * One window {@code [start, end)} of a windowed algorithm, with its neighbours: aligned to the Unix
 * epoch ({@code start} a multiple of {@code duration}; a {@code duration} of 0 counts as 1 ms), or
 * the calendar interval when the request is Gregorian.
 *
 * @param previousStart start of the window before
 * @param start first millisecond of the window
 * @param end first millisecond of the next window
 * @param nextEnd first millisecond after the next window
 */
record Window(long previousStart, long start, long end, long nextEnd) {

  /** Returns the length of this window in milliseconds. */
  long length() {
    return end - start;
  }

  /** Returns the window of {@code r} that contains {@code now}. */
  static Window containing(RateLimitRequest r, long now, Calendars calendars) {
    if (r.has(Behavior.DURATION_IS_GREGORIAN)) {
      GregorianCalendarMath calendar = calendars.of(r);
      GregorianInterval interval = RequestValidator.intervalOf(r.duration());
      long start = calendar.start(interval, now);
      long end = calendar.end(interval, now);
      return new Window(
          calendar.start(interval, sub(start, 1)), start, end, calendar.end(interval, end));
    }
    long length = Math.max(1, r.duration());
    long start = SaturatingMath.mul(Math.floorDiv(now, length), length);
    long end = add(start, length);
    return new Window(sub(start, length), start, end, add(end, length));
  }
}
