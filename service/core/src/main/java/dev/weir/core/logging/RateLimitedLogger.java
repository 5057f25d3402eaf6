package dev.weir.core.logging;

import dev.weir.core.time.Clock;
import dev.weir.core.time.SystemClock;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Logs a repeated warning at most once per key per interval, reporting how many were suppressed
 * in between: {@code "peer 10.0.0.2:1051 failed (suppressed 41 similar warnings)"}.
 *
 * <p>Keys name a kind of failure (a peer address, a component), never a client's rate-limit key,
 * and at most {@value #MAX_KEYS} keys are tracked; beyond that the oldest state is dropped, which
 * at worst lets one extra line through.
 */
public final class RateLimitedLogger {

  /** The default interval between two lines with the same key. */
  public static final Duration DEFAULT_INTERVAL = Duration.ofSeconds(10);

  static final int MAX_KEYS = 1024;

  private final Logger log;
  private final Clock clock;
  private final long intervalNanos;
  private final Map<String, Window> windows = new ConcurrentHashMap<>();

  /** Creates a logger writing to {@code log} at most once per {@code interval} per key. */
  public RateLimitedLogger(Logger log, Clock clock, Duration interval) {
    this.log = Objects.requireNonNull(log, "log");
    this.clock = Objects.requireNonNull(clock, "clock");
    this.intervalNanos = interval.toNanos();
  }

  /** Returns a logger for {@code type} on the system clock with the default interval. */
  public static RateLimitedLogger of(Class<?> type) {
    return new RateLimitedLogger(LoggerFactory.getLogger(type), SystemClock.INSTANCE, DEFAULT_INTERVAL);
  }

  /**
   * Logs {@code format} with {@code args} (SLF4J style; a trailing throwable is logged with its
   * stack) at WARN unless a line with {@code key} was logged less than the interval ago; returns
   * whether it logged.
   */
  public boolean warn(String key, String format, Object... args) {
    if (!log.isWarnEnabled()) {
      return false;
    }
    long now = clock.monotonicNanos();
    if (windows.size() >= MAX_KEYS && !windows.containsKey(key)) {
      windows.clear();
    }
    long[] suppressed = {-1};
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
    if (suppressed[0] < 0) {
      return false;
    }
    if (suppressed[0] == 0) {
      log.warn(format, args);
    } else {
      log.warn(format + " (suppressed " + suppressed[0] + " similar warnings)", args);
    }
    return true;
  }

  private static final class Window {
    final long loggedAt;
    long suppressed;

    Window(long loggedAt) {
      this.loggedAt = loggedAt;
    }
  }
}
