package dev.weir.core.testkit;

import dev.weir.core.cluster.BucketDecider;
import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.Decision;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;

/**
 * A minimal token-bucket {@link BucketDecider} for cluster tests, which test where a bucket lives, not
 * how it decides: a window of {@code duration} from the first hit; hits over {@code remaining} are
 * refused without consuming (emptying with DRAIN_OVER_LIMIT); RESET_REMAINING removes the bucket.
 */
public final class WindowCounterDecider implements BucketDecider {

  @Override
  public Decision apply(BucketState prior, RateLimitRequest r, long now) {
    long at = r.createdAt() == 0 ? now : r.createdAt();
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
