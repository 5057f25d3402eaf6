package dev.weir.core.cluster;

import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.Decision;
import dev.weir.core.model.RateLimitRequest;

/** A pure decision function with the shape of {@code RateLimitEngine::apply}. */
@FunctionalInterface
public interface BucketDecider {

  /** Decides {@code request} against {@code prior} (null when absent) at epoch millisecond {@code now}. */
  Decision apply(BucketState prior, RateLimitRequest request, long now);
}
