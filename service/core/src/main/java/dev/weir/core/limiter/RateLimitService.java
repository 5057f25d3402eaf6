package dev.weir.core.limiter;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import java.util.ArrayList;
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
   * Returns {@code service}'s answers to {@code requests}, in order, however many there are: a list
   * longer than {@link #MAX_BATCH_SIZE} is checked in slices of that size, one call each.
   */
  static CompletableFuture<List<RateLimitResponse>> decideInSlices(
      RateLimitService service, List<RateLimitRequest> requests) {
    if (!tooManyItems(requests.size())) {
      return service.decide(requests);
    }
    List<CompletableFuture<List<RateLimitResponse>>> slices = new ArrayList<>();
    for (int from = 0; from < requests.size(); from += MAX_BATCH_SIZE) {
      int to = Math.min(requests.size(), from + MAX_BATCH_SIZE);
      slices.add(service.decide(requests.subList(from, to)));
    }
    return CompletableFuture.allOf(slices.toArray(new CompletableFuture<?>[0]))
        .thenApply(
            done -> {
              List<RateLimitResponse> all = new ArrayList<>(requests.size());
              slices.forEach(slice -> all.addAll(slice.join()));
              return all;
            });
  }

  /**
   * Checks {@code requests} and completes with one response per request, in the same order. Bad
   * items get a per-item error; a call with more than {@link #MAX_BATCH_SIZE} items fails with
   * {@link RequestTooLargeException}.
   */
  CompletableFuture<List<RateLimitResponse>> decide(List<RateLimitRequest> requests);
}
