package dev.weir.core.testkit;

import dev.weir.core.time.Scheduler;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * A {@link Scheduler} driven by a {@link FakeClock}: tasks run on the test's thread when the test
 * calls {@link #advance(Duration)} or {@link #runDue()}, in due-time order (then scheduling order).
 */
public final class FakeScheduler implements Scheduler {

  private final FakeClock clock;
  private final List<Entry> tasks = new ArrayList<>();
  private long sequence;

  /** Creates a scheduler whose time is {@code clock}'s monotonic reading. */
  public FakeScheduler(FakeClock clock) {
    this.clock = clock;
  }

  @Override
  public synchronized Task schedule(Runnable task, Duration delay) {
    Entry e = new Entry(clock.monotonicNanos() + delay.toNanos(), sequence++, task);
    tasks.add(e);
    return () -> {
      synchronized (FakeScheduler.this) {
        tasks.remove(e);
      }
    };
  }

  /** Advances the clock by {@code step} and runs every task that is then due. */
  public void advance(Duration step) {
    clock.advance(step);
    runDue();
  }

  /** Runs every task due at the clock's current time, including tasks those tasks schedule. */
  public void runDue() {
    while (true) {
      Entry next;
      synchronized (this) {
        next =
            tasks.stream()
                .filter(e -> e.due <= clock.monotonicNanos())
                .min(Comparator.comparingLong(Entry::due).thenComparingLong(Entry::seq))
                .orElse(null);
        if (next == null) {
          return;
        }
        tasks.remove(next);
      }
      next.task.run();
    }
  }

  /** Returns the number of tasks scheduled and not yet run or cancelled. */
  public synchronized int pending() {
    return tasks.size();
  }

  private record Entry(long due, long seq, Runnable task) {}
}
