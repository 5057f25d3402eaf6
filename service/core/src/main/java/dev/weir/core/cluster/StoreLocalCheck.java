package dev.weir.core.cluster;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.store.BucketStore;
import dev.weir.core.time.Clock;

/** A {@link LocalCheck} that applies a {@link BucketDecider} to a {@link BucketStore} atomically per key. */
public final class StoreLocalCheck implements LocalCheck {

  private final BucketStore store;
  private final BucketDecider decider;
  private final Clock clock;

  /** Creates a check over {@code store} deciding with {@code decider} at {@code clock}'s wall time. */
  public StoreLocalCheck(BucketStore store, BucketDecider decider, Clock clock) {
    this.store = store;
    this.decider = decider;
    this.clock = clock;
  }

  @Override
  public RateLimitResponse check(RateLimitRequest request) {
    String key = request.hashKey();
    try {
      return store.update(key, prior -> decider.apply(prior, request, clock.wallMillis()));
    } catch (RuntimeException e) {
      return RateLimitResponse.error(
          "Error while apply rate limit for '" + key + "': " + e.getMessage());
    }
  }
}
