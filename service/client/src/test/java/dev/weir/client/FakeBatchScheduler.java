package dev.weir.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** A {@link BatchScheduler} whose tasks run only when the test calls {@link #runDue}. */
final class FakeBatchScheduler implements BatchScheduler {

  private final List<Scheduled> tasks = new ArrayList<>();
  private boolean closed;

  private static final class Scheduled {
    final Runnable task;
    final Duration delay;
    boolean cancelled;

    Scheduled(Runnable task, Duration delay) {
      this.task = task;
      this.delay = delay;
    }
  }

  @Override
  public synchronized Task schedule(Runnable task, Duration delay) {
    Scheduled scheduled = new Scheduled(task, delay);
    tasks.add(scheduled);
    return () -> {
      synchronized (this) {
        scheduled.cancelled = true;
      }
    };
  }

  /** Runs every task scheduled and not cancelled so far, as if their delays had passed. */
  void runDue() {
    List<Scheduled> due;
    synchronized (this) {
      due = tasks.stream().filter(t -> !t.cancelled).toList();
      tasks.clear();
    }
    due.forEach(t -> t.task.run());
  }

  /** Returns the delays of the tasks waiting to run. */
  synchronized List<Duration> waiting() {
    return tasks.stream().filter(t -> !t.cancelled).map(t -> t.delay).toList();
  }

  synchronized boolean closed() {
    return closed;
  }

  @Override
  public synchronized void close() {
    closed = true;
  }
}
