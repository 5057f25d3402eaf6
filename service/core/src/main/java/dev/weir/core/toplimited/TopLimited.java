package dev.weir.core.toplimited;

import dev.weir.core.time.Clock;
import java.util.Objects;

/**
 * A node's top-limited keys: an {@link OverLimitRecorder} that counts each over-limit answer in a
 * {@link TopLimitedWindow} at the clock's monotonic time, and reads the window at that time. The
 * window's minutes are not wall-clock minutes: a wall clock stepped back would hide the keys of the
 * last minutes and later show keys older than the window as recent.
 */
public final class TopLimited implements OverLimitRecorder {

  private final TopLimitedWindow window;
  private final Clock clock;

  /** Creates the recorder counting in {@code window} at {@code clock}'s monotonic time. */
  public TopLimited(TopLimitedWindow window, Clock clock) {
    this.window = Objects.requireNonNull(window, "window");
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  @Override
  public void overLimit(LimitedKey key, long hits) {
    window.record(key, hits, nowMillis());
  }

  /** Returns the keys of the window ending now, highest first. */
  public TopLimitedView view() {
    return window.view(nowMillis());
  }

  private long nowMillis() {
    return Math.floorDiv(clock.monotonicNanos(), 1_000_000L);
  }

  /** Returns the window counted in. */
  public TopLimitedWindow window() {
    return window;
  }
}
