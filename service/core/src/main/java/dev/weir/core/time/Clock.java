package dev.weir.core.time;

/**
 * A source of time: wall-clock milliseconds for values that travel between nodes ({@code created_at},
 * {@code reset_time}) and monotonic nanoseconds for timers and cache expiry.
 *
 * <p>{@link SystemClock} is the only implementation that reads the system clock; tests use {@code
 * FakeClock} from the core test kit.
 */
public interface Clock {

  /** Returns milliseconds since the Unix epoch. */
  long wallMillis();

  /** Returns a monotonic nanosecond reading, meaningful only as a difference between two readings. */
  long monotonicNanos();
}
