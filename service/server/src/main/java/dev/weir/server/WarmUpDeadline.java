package dev.weir.server;

import dev.weir.core.time.Clock;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The moment a start-up warm-up step must end, on the node's clock, or sooner when the process is
 * told to stop, and the read and connect timeouts that keep its blocking sockets from waiting past
 * it.
 */
final class WarmUpDeadline {

  /** The longest one connect or read may wait, whatever is left. */
  static final int SOCKET_TIMEOUT_MILLIS = 2_000;

  private final Clock clock;
  private final long nanos;
  private final BooleanSupplier stopping;

  private WarmUpDeadline(Clock clock, long nanos, BooleanSupplier stopping) {
    this.clock = clock;
    this.nanos = nanos;
    this.stopping = stopping;
  }

  /** Returns the deadline {@code budgetNanos} after now on {@code clock}. */
  static WarmUpDeadline after(Clock clock, long budgetNanos) {
    return after(clock, budgetNanos, () -> false);
  }

  /**
   * Returns the deadline {@code budgetNanos} after now on {@code clock}, passed at once when {@code
   * stopping} says the process was told to stop.
   */
  static WarmUpDeadline after(Clock clock, long budgetNanos, BooleanSupplier stopping) {
    return new WarmUpDeadline(clock, clock.monotonicNanos() + budgetNanos, stopping);
  }

  /** Returns whether the deadline is still ahead. */
  boolean before() {
    return clock.monotonicNanos() - nanos < 0 && !stopping.getAsBoolean();
  }

  /** Returns the nanoseconds left, 0 once the deadline has passed. */
  long leftNanos() {
    return stopping.getAsBoolean() ? 0 : Math.max(0, nanos - clock.monotonicNanos());
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
