package dev.weir.core.discovery;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A peer-set listener that passes the first set on at once and then at most one set per window: every
 * set received within a window after a change replaces the pending one, and when the window ends the
 * latest set is delivered unless it equals the last one delivered. A peer that flaps out and back
 * within a window therefore causes no ring rebuild at all.
 *
 * <p>The window is fixed from the first change (not restarted by each event), so continuous churn
 * still reaches the ring once per window.
 */
public final class CoalescingListener implements Consumer<Set<String>>, AutoCloseable {
  /** The default coalescing window. */
  public static final Duration DEFAULT_WINDOW = Duration.ofMillis(250);

  private final Consumer<Set<String>> downstream;
  private final ScheduledExecutorService scheduler;
  private final Duration window;

  private Set<String> delivered;
  private Set<String> pending;
  private ScheduledFuture<?> flush;
  private boolean closed;

  /** Creates a listener that feeds {@code downstream}, timing windows on {@code scheduler}. */
  public CoalescingListener(
      Consumer<Set<String>> downstream, ScheduledExecutorService scheduler, Duration window) {
    this.downstream = downstream;
    this.scheduler = scheduler;
    this.window = window;
  }

  @Override
  public void accept(Set<String> peers) {
    Set<String> copy = Set.copyOf(peers);
    Set<String> now = null;
    synchronized (this) {
      if (closed) {
        return;
      }
      if (delivered == null) {
        delivered = copy;
        now = copy;
      } else {
        pending = copy;
        if (flush == null) {
          flush = scheduler.schedule(this::flush, window.toNanos(), TimeUnit.NANOSECONDS);
        }
      }
    }
    if (now != null) {
      downstream.accept(now);
    }
  }

  private void flush() {
    Set<String> next;
    synchronized (this) {
      flush = null;
      next = pending;
      pending = null;
      if (closed || next == null || next.equals(delivered)) {
        return;
      }
      delivered = next;
    }
    downstream.accept(next);
  }

  /** Drops any pending set and stops delivering. */
  @Override
  public synchronized void close() {
    closed = true;
    pending = null;
    if (flush != null) {
      flush.cancel(false);
      flush = null;
    }
  }
}
