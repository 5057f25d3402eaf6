package dev.weir.core.testkit;

import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.Decision;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.limiter.BucketCheck;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.store.BucketStore;

/**
 * A minimal token-bucket {@link BucketCheck} over a store, for cluster tests, which test where a bucket
 * lives and how it travels, not how it decides: a window of {@code duration} from the first hit; hits
 * over {@code remaining} are refused without consuming (emptying with DRAIN_OVER_LIMIT);
 * RESET_REMAINING removes the bucket. The request's {@code created_at} is its clock.
 */
public final class WindowCounterCheck implements BucketCheck {

  private final BucketStore store;

  /** Creates a check over {@code store}. */
  public WindowCounterCheck(BucketStore store) {
    this.store = store;
  }

  @Override
  public RateLimitResponse decide(RateLimitRequest r) {
    return store.update(r.hashKey(), r.createdAt(), prior -> decide(prior, r));
  }

  private static Decision decide(BucketState prior, RateLimitRequest r) {
    long at = r.createdAt();
    if (r.has(Behavior.RESET_REMAINING)) {
      return new Decision(null, RateLimitResponse.of(Status.UNDER_LIMIT, r.limit(), r.limit(), 0));
    }
    TokenBucketState s =
        prior instanceof TokenBucketState t
            ? t
            : new TokenBucketState(
                Status.UNDER_LIMIT, r.limit(), r.duration(), r.limit(), at, at + r.duration());
    if (r.hits() > s.remaining()) {
      long left = r.has(Behavior.DRAIN_OVER_LIMIT) ? 0 : s.remaining();
      TokenBucketState next =
          new TokenBucketState(s.status(), s.limit(), s.duration(), left, s.createdAt(), s.expireAt());
      return new Decision(
          next, RateLimitResponse.of(Status.OVER_LIMIT, r.limit(), left, s.expireAt()));
    }
    TokenBucketState next =
        new TokenBucketState(
            s.status(), s.limit(), s.duration(), s.remaining() - r.hits(), s.createdAt(), s.expireAt());
    return new Decision(
        next, RateLimitResponse.of(Status.UNDER_LIMIT, r.limit(), next.remaining(), s.expireAt()));
  }
}
