package dev.weir.core.discovery;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * A {@link ScheduledExecutorService} driven by hand: tasks run on the calling thread when {@link
 * #advance} moves its clock past their time; {@link #execute} runs at once.
 */
public final class ManualScheduler extends AbstractExecutorService implements ScheduledExecutorService {
  private final PriorityQueue<Task<?>> queue =
      new PriorityQueue<>(Comparator.<Task<?>>comparingLong(t -> t.at).thenComparingLong(t -> t.seq));
  private long now;
  private long seq;
  private boolean shutdown;

  /** Moves the clock forward by {@code by}, running every task due on the way in time order. */
  public void advance(Duration by) {
    long until = now + by.toNanos();
    while (!queue.isEmpty() && queue.peek().at <= until) {
      Task<?> task = queue.poll();
      now = task.at;
      task.run();
    }
    now = until;
  }

  /** Returns the number of scheduled tasks not yet run or cancelled. */
  public int pending() {
    return (int) queue.stream().filter(t -> !t.isCancelled()).count();
  }

  @Override
  public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
    return add(new Task<>(() -> {
      command.run();
      return null;
    }, now + unit.toNanos(delay), 0));
  }

  @Override
  public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
    return add(new Task<>(callable, now + unit.toNanos(delay), 0));
  }

  @Override
  public ScheduledFuture<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period, TimeUnit unit) {
    return scheduleWithFixedDelay(command, initialDelay, period, unit);
  }

  @Override
  public ScheduledFuture<?> scheduleWithFixedDelay(Runnable command, long initialDelay, long delay, TimeUnit unit) {
    return add(new Task<>(() -> {
      command.run();
      return null;
    }, now + unit.toNanos(initialDelay), unit.toNanos(delay)));
  }

  @Override
  public void execute(Runnable command) {
    command.run();
  }

  @Override
  public void shutdown() {
    shutdown = true;
  }

  @Override
  public List<Runnable> shutdownNow() {
    shutdown = true;
    queue.clear();
    return new ArrayList<>();
  }

  @Override
  public boolean isShutdown() {
    return shutdown;
  }

  @Override
  public boolean isTerminated() {
    return shutdown;
  }

  @Override
  public boolean awaitTermination(long timeout, TimeUnit unit) {
    return shutdown;
  }

  private <V> Task<V> add(Task<V> task) {
    queue.add(task);
    return task;
  }

  private final class Task<V> extends java.util.concurrent.FutureTask<V> implements ScheduledFuture<V> {
    private long at;
    private final long period;
    private final long seq = ManualScheduler.this.seq++;

    Task(Callable<V> callable, long at, long period) {
      super(callable);
      this.at = at;
      this.period = period;
    }

    @Override
    public void run() {
      if (period == 0) {
        super.run();
      } else if (super.runAndReset()) {
        at = now + period;
        queue.add(this);
      }
    }

    @Override
    public long getDelay(TimeUnit unit) {
      return unit.convert(at - now, TimeUnit.NANOSECONDS);
    }

    @Override
    public int compareTo(Delayed o) {
      return Long.compare(getDelay(TimeUnit.NANOSECONDS), o.getDelay(TimeUnit.NANOSECONDS));
    }
  }
}
