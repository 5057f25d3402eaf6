package dev.weir.client;

import java.time.Duration;

/** A source of delayed execution for the batch window, injected so that tests fire it by hand. */
interface BatchScheduler extends AutoCloseable {

  /** Runs {@code task} once after {@code delay}; returns a handle to cancel it. */
  Task schedule(Runnable task, Duration delay);

  /** Stops running tasks; tasks not yet run are dropped. */
  @Override
  void close();

  /** A scheduled task. */
  interface Task {
    /** Cancels the task if it has not run yet; does nothing otherwise. */
    void cancel();
  }
}
