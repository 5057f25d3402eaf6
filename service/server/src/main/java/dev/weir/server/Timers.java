package dev.weir.server;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/** The node's timer threads: single daemon schedulers and the periodic tasks they run. */
final class Timers {

  private Timers() {}

  /** Returns a scheduler running on one daemon thread named {@code threadName}. */
  static ScheduledExecutorService daemonScheduler(String threadName) {
    return Executors.newSingleThreadScheduledExecutor(
        runnable -> {
          Thread thread = new Thread(runnable, threadName);
          thread.setDaemon(true);
          return thread;
        });
  }

  /** Runs {@code task} on {@code timers} every {@code period}, the first time after one. */
  static void every(ScheduledExecutorService timers, Duration period, Runnable task) {
    long millis = period.toMillis();
    timers.scheduleWithFixedDelay(task, millis, millis, TimeUnit.MILLISECONDS);
  }
}
