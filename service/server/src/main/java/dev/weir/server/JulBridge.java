package dev.weir.server;

import dev.weir.core.logging.LogThrottle;
import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.time.Clock;
import dev.weir.core.time.SystemClock;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import org.slf4j.bridge.SLF4JBridgeHandler;

/**
 * Sends what libraries log through {@code java.util.logging} (gRPC and its Netty transport) to
 * SLF4J, so that it takes Weir's log format and levels, and lets at most one WARNING or SEVERE
 * record per logger, level and exception type through every {@link
 * RateLimitedLogger#DEFAULT_INTERVAL}, the next one saying how many were held back. Levels reach
 * JUL from Logback ({@code LevelChangePropagator} in {@code logback.xml}), so records below them
 * are never even created.
 */
final class JulBridge extends SLF4JBridgeHandler {

  private final LogThrottle throttle;

  JulBridge(Clock clock) {
    this.throttle = new LogThrottle(clock, RateLimitedLogger.DEFAULT_INTERVAL);
  }

  /**
   * Replaces the JUL root logger's handlers (the console handler that writes to stderr) with a
   * bridge on the system clock, unless a bridge is installed already.
   */
  static synchronized void installThrottled() {
    if (SLF4JBridgeHandler.isInstalled()) {
      return;
    }
    SLF4JBridgeHandler.removeHandlersForRootLogger();
    LogManager.getLogManager().getLogger("").addHandler(new JulBridge(SystemClock.INSTANCE));
  }

  @Override
  public void publish(LogRecord record) {
    if (record == null) {
      return;
    }
    if (record.getLevel().intValue() >= Level.WARNING.intValue()) {
      long suppressed = throttle.admit(key(record));
      if (suppressed == LogThrottle.SUPPRESSED) {
        return;
      }
      if (suppressed > 0) {
        record.setMessage(
            record.getMessage() + " (suppressed " + suppressed + " similar messages)");
      }
    }
    super.publish(record);
  }

  /**
   * Returns the kind of {@code record}: its logger, level and exception type (gRPC writes call
   * details into the message itself, so the message would make every record its own kind).
   */
  static String key(LogRecord record) {
    return record.getLoggerName()
        + ' '
        + record.getLevel().getName()
        + (record.getThrown() == null ? "" : ' ' + record.getThrown().getClass().getName());
  }
}
