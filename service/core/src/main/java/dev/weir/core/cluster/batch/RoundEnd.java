package dev.weir.core.cluster.batch;

/**
 * The end of the calling thread's current round of work: for a transport's event loop, the point
 * after it has handled every connection that was ready to read, before it waits for more. Work
 * deferred to it gathers what that round brings in without waiting on a timer.
 */
@FunctionalInterface
public interface RoundEnd {

  /** No rounds: every task is refused, so callers run it at once. */
  RoundEnd NONE = task -> false;

  /**
   * Runs {@code task} on the calling thread once its current round ends; false, with nothing
   * scheduled, when the calling thread works in no rounds.
   */
  boolean defer(Runnable task);
}
