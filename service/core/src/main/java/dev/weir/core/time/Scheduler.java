package dev.weir.core.time;

import java.time.Duration;

/** A source of delayed execution, injected so that tests run timers on a fake clock. */
public interface Scheduler {

  /** Runs {@code task} once after {@code delay}, on a scheduler thread; returns a handle to cancel it. */
  Task schedule(Runnable task, Duration delay);

  /** A scheduled task. */
  interface Task {
    /** Cancels the task if it has not run yet; does nothing otherwise. */
    void cancel();
  }
}
