package dev.weir.http;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The bytes of request bodies a listener has read but not yet whole, on all its connections
 * together, held to a budget.
 */
final class UnfinishedBodies {

  /** How many bodies of the largest size allowed the budget holds. */
  static final int LARGEST_BODIES = 16;

  private final long budget;
  private final AtomicLong held = new AtomicLong();

  /** Creates the count with room for {@code budget} bytes. */
  UnfinishedBodies(long budget) {
    this.budget = budget;
  }

  /** Returns the budget of a listener whose largest body is {@code maxBodyBytes}. */
  static long budgetFor(int maxBodyBytes) {
    return (long) LARGEST_BODIES * Math.max(1, maxBodyBytes);
  }

  /** Returns the budget in bytes. */
  long budget() {
    return budget;
  }

  /** Counts {@code bytes} more and returns true, or returns false, counting nothing, when they do not fit. */
  boolean take(long bytes) {
    while (true) {
      long now = held.get();
      if (now + bytes > budget) {
        return false;
      }
      if (held.compareAndSet(now, now + bytes)) {
        return true;
      }
    }
  }

  /** Gives back {@code bytes} taken earlier. */
  void give(long bytes) {
    held.addAndGet(-bytes);
  }

  /** Returns the bytes counted now. */
  long held() {
    return held.get();
  }
}
