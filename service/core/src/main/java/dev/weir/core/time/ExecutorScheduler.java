package dev.weir.core.time;

import java.time.Duration;
import java.util.PriorityQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The production {@link Scheduler}: one timer thread that keeps the due times, and a pool of daemon
 * threads that runs the tasks, where {@link #schedule} takes no lock and never waits.
 *
 * <p>Callers include gRPC transport threads (a GLOBAL key's first hit of a sync window arms the
 * broadcast timer; a forwarded batch arms its window), so arming a timer must not park the caller
 * on a lock a timer thread holds, as {@code ScheduledThreadPoolExecutor}'s queue lock does. Here a
 * caller appends to a lock-free queue and wakes the timer thread only when the new task is due
 * before the thread's next wake-up.
 */
public final class ExecutorScheduler implements Scheduler, AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(ExecutorScheduler.class);

  private final ConcurrentLinkedQueue<Entry> arriving = new ConcurrentLinkedQueue<>();
  private final PriorityQueue<Entry> waiting = new PriorityQueue<>(ExecutorScheduler::byDueTime);
  private final ExecutorService runners;
  private final Thread timer;
  private final AtomicInteger sequence = new AtomicInteger();
  private volatile boolean sleeping;
  private volatile long wakeAt;
  private volatile boolean closed;

  /** Creates a scheduler whose tasks run on {@code threads} daemon threads named after {@code name}. */
  public ExecutorScheduler(String name, int threads) {
    AtomicInteger n = new AtomicInteger();
    this.runners =
        Executors.newFixedThreadPool(
            threads, r -> daemon(r, name + "-" + n.incrementAndGet()));
    this.timer = daemon(this::keepTime, name + "-timer");
    timer.start();
  }

  /**
   * {@inheritDoc}
   *
   * @throws RejectedExecutionException when the scheduler is closed
   */
  @Override
  public Task schedule(Runnable task, Duration delay) {
    Entry e = new Entry(System.nanoTime() + delay.toNanos(), sequence.getAndIncrement(), task);
    arriving.offer(e);
    if (closed) {
      throw new RejectedExecutionException("the scheduler is closed");
    }
    if (sleeping && e.due - wakeAt < 0) {
      LockSupport.unpark(timer);
    }
    return e;
  }

  /** Stops the threads; tasks not yet run are dropped. */
  @Override
  public void close() {
    closed = true;
    LockSupport.unpark(timer);
    runners.shutdownNow();
  }

  private void keepTime() {
    while (!closed) {
      try {
        waitForNextDue();
      } catch (RuntimeException | Error failure) {
        LOG.error("the timer thread failed; it keeps timing the tasks it holds", failure);
      }
    }
    arriving.clear();
    waiting.clear();
  }

  /** Starts every task due, then sleeps until the next one is due or a caller wakes this thread. */
  private void waitForNextDue() {
    for (Entry e; (e = arriving.poll()) != null; ) {
      waiting.add(e);
    }
    long now = System.nanoTime();
    while (!waiting.isEmpty() && waiting.peek().due - now <= 0) {
      start(waiting.poll());
    }
    Entry next = waiting.peek();
    long sleep = next == null ? Long.MAX_VALUE : next.due - now;
    wakeAt = next == null ? now + Long.MAX_VALUE / 2 : next.due;
    sleeping = true;
    if (arriving.isEmpty() && !closed) {
      LockSupport.parkNanos(this, sleep);
    }
    sleeping = false;
  }

  private void start(Entry e) {
    if (e.cancelled) {
      return;
    }
    try {
      runners.execute(e);
    } catch (RejectedExecutionException closing) {
      // close() stopped the runners: tasks not yet run are dropped.
    }
  }

  private static int byDueTime(Entry a, Entry b) {
    int byDue = Long.compare(a.due - b.due, 0);
    return byDue != 0 ? byDue : Integer.compare(a.seq - b.seq, 0);
  }

  private static Thread daemon(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    return t;
  }

  /** A task waiting for its due time; cancelling marks it, and the timer thread skips it. */
  private static final class Entry implements Task, Runnable {
    final long due;
    final int seq;
    final Runnable task;
    volatile boolean cancelled;

    Entry(long due, int seq, Runnable task) {
      this.due = due;
      this.seq = seq;
      this.task = task;
    }

    @Override
    public void cancel() {
      cancelled = true;
    }

    @Override
    public void run() {
      if (cancelled) {
        return;
      }
      try {
        task.run();
      } catch (RuntimeException | Error failure) {
        LOG.warn("a scheduled task failed", failure);
      }
    }
  }
}
