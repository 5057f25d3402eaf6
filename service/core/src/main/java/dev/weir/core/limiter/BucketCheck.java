package dev.weir.core.limiter;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;

/**
 * Evaluates one request against this node's own buckets, as the key's owner (or, for GLOBAL, as a
 * non-owner answering from its local copy). The request has passed field validation and carries its
 * {@code created_at}; algorithm-level problems come back as the response's error.
 */
@FunctionalInterface
public interface BucketCheck {

  /** Applies {@code request} to its bucket and returns the answer. */
  RateLimitResponse decide(RateLimitRequest request);
}
