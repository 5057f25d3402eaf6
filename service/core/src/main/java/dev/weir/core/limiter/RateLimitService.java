package dev.weir.core.limiter;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The one request path every front door uses: checks a list of requests and answers each, in order,
 * wherever the buckets live.
 */
public interface RateLimitService {

  /** The most items one call may carry. */
  int MAX_BATCH_SIZE = 1000;

  /**
   * Returns whether {@code count} items are more than one call may carry: the one test of {@link
   * #MAX_BATCH_SIZE} the front doors and the services share.
   */
  static boolean tooManyItems(int count) {
    return count > MAX_BATCH_SIZE;
  }

  /**
   * Checks {@code requests} and completes with one response per request, in the same order. Bad
   * items get a per-item error; a call with more than {@link #MAX_BATCH_SIZE} items fails with
   * {@link RequestTooLargeException}.
   */
  CompletableFuture<List<RateLimitResponse>> decide(List<RateLimitRequest> requests);
}
