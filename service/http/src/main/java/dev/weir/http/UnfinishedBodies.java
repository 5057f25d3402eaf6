package dev.weir.http;

import dev.weir.core.limiter.ByteBudget;

/**
 * The bytes of request bodies a listener has read but not yet whole, on all its connections
 * together, held to a budget.
 */
final class UnfinishedBodies {

  /** How many bodies of the largest size allowed the budget holds. */
  static final int LARGEST_BODIES = 16;

  private final ByteBudget budget;

  /** Creates the count with room for {@code budget} bytes. */
  UnfinishedBodies(long budget) {
    this.budget = new ByteBudget(budget);
  }

  /** Returns the budget of a listener whose largest body is {@code maxBodyBytes}. */
  static long budgetFor(int maxBodyBytes) {
    return (long) LARGEST_BODIES * Math.max(1, maxBodyBytes);
  }

  /** Returns the budget in bytes. */
  long budget() {
    return budget.most();
  }

  /** Counts {@code bytes} more and returns true, or returns false, counting nothing, when they do not fit. */
  boolean take(long bytes) {
    return budget.take(bytes);
  }

  /** Gives back {@code bytes} taken earlier. */
  void give(long bytes) {
    budget.give(bytes);
  }

  /** Returns the bytes counted now. */
  long held() {
    return budget.held();
  }
}
