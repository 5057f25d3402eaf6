package dev.weir.server;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/** A {@link Sleeper} that holds the thread until {@link #release()} or an interrupt, not a timer. */
final class HeldSleeper implements Sleeper {

  private final CountDownLatch entered = new CountDownLatch(1);
  private final CountDownLatch released = new CountDownLatch(1);
  private final AtomicReference<Duration> asked = new AtomicReference<>();

  @Override
  public void sleep(Duration duration) throws InterruptedException {
    asked.set(duration);
    entered.countDown();
    released.await();
  }

  /** Waits up to 10 s for a thread to sleep and returns how long it asked to; null if none did. */
  Duration awaitSleeping() throws InterruptedException {
    return entered.await(10, TimeUnit.SECONDS) ? asked.get() : null;
  }

  /** Lets the sleeping thread go on. */
  void release() {
    released.countDown();
  }
}
