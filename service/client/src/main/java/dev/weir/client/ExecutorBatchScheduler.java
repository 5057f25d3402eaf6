package dev.weir.client;

import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/** A {@link BatchScheduler} on one daemon thread. */
final class ExecutorBatchScheduler implements BatchScheduler {

  private final ScheduledThreadPoolExecutor executor;

  ExecutorBatchScheduler() {
    executor =
        new ScheduledThreadPoolExecutor(
            1,
            runnable -> {
              Thread thread = new Thread(runnable, "weir-client-batch");
              thread.setDaemon(true);
              return thread;
            });
    executor.setRemoveOnCancelPolicy(true);
  }

  @Override
  public Task schedule(Runnable task, Duration delay) {
    ScheduledFuture<?> future = executor.schedule(task, delay.toNanos(), TimeUnit.NANOSECONDS);
    return () -> future.cancel(false);
  }

  @Override
  public void close() {
    executor.shutdownNow();
  }
}
