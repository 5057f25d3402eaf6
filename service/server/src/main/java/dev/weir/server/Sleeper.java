package dev.weir.server;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Waits for a while on the current thread: how a stopping node keeps serving through {@code
 * WEIR_GRACEFUL_TERMINATION_DELAY}, which tests replace so that they do not wait.
 */
@FunctionalInterface
interface Sleeper {

  /** Waits on the thread's own timer. */
  Sleeper SYSTEM = duration -> TimeUnit.NANOSECONDS.sleep(duration.toNanos());

  /**
   * Returns after {@code duration}.
   *
   * @throws InterruptedException when the thread is interrupted first
   */
  void sleep(Duration duration) throws InterruptedException;
}
