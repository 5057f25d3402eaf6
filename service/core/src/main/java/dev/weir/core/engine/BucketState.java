package dev.weir.core.engine;

import dev.weir.core.model.Algorithm;

/**
 * The immutable state of one bucket between requests. Every value is a whole number so that states
 * travel between nodes (GLOBAL broadcasts, hand-off) without rounding.
 */
public sealed interface BucketState
    permits TokenBucketState, LeakyBucketState, FixedWindowState, SlidingWindowState {

  /** Returns the algorithm this state belongs to. */
  Algorithm algorithm();

  /** Returns the epoch millisecond from which this state is void and a new bucket starts. */
  long expireAt();
}
