package dev.weir.core.logging;

import dev.weir.core.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Decides which of a repeated kind of log line is written: at most one per key per interval, and
 * the one written learns how many were held back since the last. The logging itself is the
 * caller's ({@link RateLimitedLogger}, the JUL bridge of the server).
 *
 * <p>Keys name a kind of line (a peer address, a logger and message template), never a client's
 * rate-limit key, and at most {@value #MAX_KEYS} keys are tracked; beyond that the state of all is
 * dropped, which at worst lets one extra line per key through.
 */
public final class LogThrottle {

  /** The most keys tracked at once. */
  static final int MAX_KEYS = 1024;

  /** What {@link #admit} returns for a line that is held back. */
  public static final long SUPPRESSED = -1;

  private final Clock clock;
  private final long intervalNanos;
  private final Map<String, Window> windows = new ConcurrentHashMap<>();

  /** Creates a throttle letting one line per key through per {@code interval} of {@code clock}. */
  public LogThrottle(Clock clock, Duration interval) {
    this.clock = Objects.requireNonNull(clock, "clock");
    this.intervalNanos = interval.toNanos();
  }

  /**
   * Returns {@link #SUPPRESSED} when a line with {@code key} was let through less than the interval
   * ago (and counts this one as held back); otherwise lets this one through and returns how many
   * were held back since the last (0 for the first).
   */
  public long admit(String key) {
    long now = clock.monotonicNanos();
    if (windows.size() >= MAX_KEYS && !windows.containsKey(key)) {
      windows.clear();
    }
    long[] suppressed = {SUPPRESSED};
    windows.compute(
        key,
        (k, window) -> {
          if (window != null && now - window.loggedAt < intervalNanos) {
            window.suppressed++;
            return window;
          }
          suppressed[0] = window == null ? 0 : window.suppressed;
          return new Window(now);
        });
    return suppressed[0];
  }

  private static final class Window {
    final long loggedAt;
    long suppressed;

    Window(long loggedAt) {
      this.loggedAt = loggedAt;
    }
  }
}
