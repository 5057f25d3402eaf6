package dev.weir.core.testkit;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * Polling waits for tests against real threads, sockets and processes, where there is no clock to
 * fake: checks a condition every {@value #PAUSE_MILLIS} ms, parking in between, so that a wait does
 * not burn a core that the code under test needs.
 */
public final class Await {

  /** The pause between two checks of a condition. */
  public static final long PAUSE_MILLIS = 5;

  private Await() {}

  /**
   * Blocks until {@code condition} holds, checking it every {@value #PAUSE_MILLIS} ms.
   *
   * @throws AssertionError naming {@code what} when it still does not hold after {@code limit}
   * @throws InterruptedException when the waiting thread is interrupted
   */
  public static void until(Duration limit, BooleanSupplier condition, String what)
      throws InterruptedException {
    if (!holdsWithin(limit, condition)) {
      throw new AssertionError("still not true after " + limit + ": " + what);
    }
  }

  /**
   * Returns whether {@code condition} holds within {@code limit}, checking it every {@value
   * #PAUSE_MILLIS} ms and once more at the end.
   *
   * @throws InterruptedException when the waiting thread is interrupted
   */
  public static boolean holdsWithin(Duration limit, BooleanSupplier condition)
      throws InterruptedException {
    long deadline = System.nanoTime() + limit.toNanos();
    while (System.nanoTime() - deadline < 0) {
      if (condition.getAsBoolean()) {
        return true;
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(PAUSE_MILLIS));
      if (Thread.interrupted()) {
        throw new InterruptedException();
      }
    }
    return condition.getAsBoolean();
  }
}
