package dev.weir.core.testkit;

import dev.weir.core.time.Clock;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/** A {@link Clock} that moves only when a test advances it; wall and monotonic time move together. */
public final class FakeClock implements Clock {

  private final AtomicLong wallMillis;
  private final AtomicLong nanos = new AtomicLong(1_000_000_000L);

  /** Creates a clock whose wall time starts at {@code startMillis}. */
  public FakeClock(long startMillis) {
    this.wallMillis = new AtomicLong(startMillis);
  }

  /** Creates a clock starting at 2026-01-01T00:00:00Z. */
  public FakeClock() {
    this(1_767_225_600_000L);
  }

  @Override
  public long wallMillis() {
    return wallMillis.get();
  }

  @Override
  public long monotonicNanos() {
    return nanos.get();
  }

  /** Moves both readings forward by {@code step}. */
  public void advance(Duration step) {
    nanos.addAndGet(step.toNanos());
    wallMillis.addAndGet(step.toMillis());
  }

  /** Moves both readings forward by {@code millis} milliseconds. */
  public void advanceMillis(long millis) {
    advance(Duration.ofMillis(millis));
  }
}
