package dev.weir.core.time;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** A {@link Scheduler} on a {@link ScheduledExecutorService} of daemon threads: the production one. */
public final class ExecutorScheduler implements Scheduler, AutoCloseable {

  private final ScheduledExecutorService executor;

  /** Creates a scheduler with {@code threads} daemon threads named after {@code name}. */
  public ExecutorScheduler(String name, int threads) {
    AtomicInteger n = new AtomicInteger();
    this.executor =
        Executors.newScheduledThreadPool(
            threads,
            r -> {
              Thread t = new Thread(r, name + "-" + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
  }

  @Override
  public Task schedule(Runnable task, Duration delay) {
    ScheduledFuture<?> f = executor.schedule(task, delay.toNanos(), TimeUnit.NANOSECONDS);
    return () -> f.cancel(false);
  }

  /** Stops the threads; tasks not yet run are dropped. */
  @Override
  public void close() {
    executor.shutdownNow();
  }
}
