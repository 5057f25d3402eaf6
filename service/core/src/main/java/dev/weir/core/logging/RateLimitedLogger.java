package dev.weir.core.logging;

import dev.weir.core.time.Clock;
import dev.weir.core.time.SystemClock;
import java.time.Duration;
import java.util.Objects;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Logs a repeated warning at most once per key per interval, reporting how many were suppressed
 * in between: {@code "peer 10.0.0.2:1051 failed (suppressed 41 similar lines)"}.
 *
 * <p>Keys name a kind of failure (a peer address, a component), never a client's rate-limit key;
 * see {@link LogThrottle} for how many are tracked.
 */
public final class RateLimitedLogger {

  /** The default interval between two lines with the same key. */
  public static final Duration DEFAULT_INTERVAL = Duration.ofSeconds(10);

  private final Logger log;
  private final LogThrottle throttle;

  /** Creates a logger writing to {@code log} at most once per {@code interval} per key. */
  public RateLimitedLogger(Logger log, Clock clock, Duration interval) {
    this.log = Objects.requireNonNull(log, "log");
    this.throttle = new LogThrottle(clock, interval);
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
    return log.isWarnEnabled() && admit(key, format, args, (f, a) -> log.warn(f, a));
  }

  /** Logs as {@link #warn} does, at ERROR. */
  public boolean error(String key, String format, Object... args) {
    return log.isErrorEnabled() && admit(key, format, args, (f, a) -> log.error(f, a));
  }

  private boolean admit(
      String key, String format, Object[] args, BiConsumer<String, Object[]> line) {
    long suppressed = throttle.admit(key);
    if (suppressed == LogThrottle.SUPPRESSED) {
      return false;
    }
    if (suppressed == 0) {
      line.accept(format, args);
    } else {
      line.accept(format + " (suppressed " + suppressed + " similar lines)", args);
    }
    return true;
  }
}
