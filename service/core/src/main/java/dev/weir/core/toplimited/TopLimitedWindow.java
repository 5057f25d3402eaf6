package dev.weir.core.toplimited;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The keys answered over their limit in the last few minutes: a ring of one {@link SpaceSaving}
 * sketch per minute, merged when read. A minute's sketch is cleared when the ring comes
 * round to it again, so the window holds the current minute and the {@code minutes - 1} before it.
 *
 * <p>Pure logic (the time comes in as an argument) and thread-safe: a record holds the window's
 * lock for one sketch offer, a read for a copy of the counters. A record never waits for the lock:
 * when another thread holds it (a flood of over-limit answers on many cores), the answer is not
 * counted and {@link #skipped()} says how many were left out, so the counts become a sample of the
 * over-limit answers (heavy hitters, which are most of such a flood, still rise to the top) and
 * recording never slows a decision down.
 */
public final class TopLimitedWindow {

  /** The length of one slot of the ring, in milliseconds. */
  public static final long SLOT_MILLIS = 60_000;

  private final List<SpaceSaving<LimitedKey>> ring;
  private final long[] slotOf;
  private final int counters;
  private final ReentrantLock lock;
  private final LongAdder skipped = new LongAdder();

  /**
   * Creates an empty window of {@code minutes} minutes, each counted in {@code counters} counters.
   */
  public TopLimitedWindow(int minutes, int counters) {
    this(minutes, counters, new ReentrantLock());
  }

  /** Creates an empty window guarded by {@code lock} (a test holds it to see records skipped). */
  TopLimitedWindow(int minutes, int counters, ReentrantLock lock) {
    this.lock = lock;
    if (minutes < 1) {
      throw new IllegalArgumentException("minutes must be at least 1, got " + minutes);
    }
    this.ring = new ArrayList<>(minutes);
    for (int i = 0; i < minutes; i++) {
      ring.add(new SpaceSaving<>(counters));
    }
    this.slotOf = new long[minutes];
    java.util.Arrays.fill(slotOf, Long.MIN_VALUE);
    this.counters = counters;
  }

  /** Returns the number of counters of each minute's sketch. */
  public int counters() {
    return counters;
  }

  /** Returns the number of minutes the window spans. */
  public int minutes() {
    return ring.size();
  }

  /** Counts one over-limit answer to {@code key} for {@code hits} hits at {@code nowMillis}. */
  public void record(LimitedKey key, long hits, long nowMillis) {
    if (!lock.tryLock()) {
      skipped.increment();
      return;
    }
    try {
      long slot = Math.floorDiv(nowMillis, SLOT_MILLIS);
      int i = (int) Math.floorMod(slot, (long) ring.size());
      SpaceSaving<LimitedKey> sketch = ring.get(i);
      if (slotOf[i] != slot) {
        sketch.clear();
        slotOf[i] = slot;
      }
      sketch.offer(key, 1, hits);
    } finally {
      lock.unlock();
    }
  }

  /** Returns how many over-limit answers were not counted because another thread was counting. */
  public long skipped() {
    return skipped.sum();
  }

  /**
   * Returns the window's keys at {@code nowMillis}, merged over its minutes, highest first. The
   * window's lock is held only to copy the counters; sorting and merging happen outside it.
   */
  public TopLimitedView view(long nowMillis) {
    long slot = Math.floorDiv(nowMillis, SLOT_MILLIS);
    List<List<SpaceSaving.Counted<LimitedKey>>> counters = new ArrayList<>(ring.size());
    List<long[]> bounds = new ArrayList<>(ring.size());
    lock.lock();
    try {
      for (int i = 0; i < ring.size(); i++) {
        if (slotOf[i] <= slot && slotOf[i] > slot - ring.size()) {
          SpaceSaving<LimitedKey> sketch = ring.get(i);
          counters.add(sketch.snapshot());
          bounds.add(new long[] {sketch.floor(), sketch.total()});
        }
      }
    } finally {
      lock.unlock();
    }
    List<TopLimitedView> views = new ArrayList<>(counters.size());
    for (int i = 0; i < counters.size(); i++) {
      views.add(TopLimitedView.of(counters.get(i), bounds.get(i)[0], bounds.get(i)[1]));
    }
    return views.isEmpty() ? TopLimitedView.EMPTY : TopLimitedView.merge(views);
  }
}
