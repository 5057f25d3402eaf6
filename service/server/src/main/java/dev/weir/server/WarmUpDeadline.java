package dev.weir.server;

import dev.weir.core.time.Clock;
import java.util.concurrent.TimeUnit;

/**
 * The moment a start-up warm-up step must end, on the node's clock, and the read and connect
 * timeouts that keep its blocking sockets from waiting past it.
 */
final class WarmUpDeadline {

  /** The longest one connect or read may wait, whatever is left. */
  static final int SOCKET_TIMEOUT_MILLIS = 2_000;

  private final Clock clock;
  private final long nanos;

  private WarmUpDeadline(Clock clock, long nanos) {
    this.clock = clock;
    this.nanos = nanos;
  }

  /** Returns the deadline {@code budgetNanos} after now on {@code clock}. */
  static WarmUpDeadline after(Clock clock, long budgetNanos) {
    return new WarmUpDeadline(clock, clock.monotonicNanos() + budgetNanos);
  }

  /** Returns whether the deadline is still ahead. */
  boolean before() {
    return clock.monotonicNanos() - nanos < 0;
  }

  /** Returns the nanoseconds left, 0 once the deadline has passed. */
  long leftNanos() {
    return Math.max(0, nanos - clock.monotonicNanos());
  }

  /**
   * Returns how long one connect or read may wait: the time left, at most {@value
   * #SOCKET_TIMEOUT_MILLIS} ms, at least 1 ms.
   */
  int socketTimeoutMillis() {
    long left = TimeUnit.NANOSECONDS.toMillis(nanos - clock.monotonicNanos());
    return (int) Math.max(1, Math.min(SOCKET_TIMEOUT_MILLIS, left));
  }
}
