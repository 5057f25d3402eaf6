package dev.weir.envoy.service;

import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.LocalRateLimitService;
import dev.weir.core.time.Clock;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The real single-node {@link LocalRateLimitService} (engine and in-memory store on the given
 * clock), wrapped to record every call and to answer a per-item error when told to, as an
 * unreachable owner would.
 */
final class RecordingRateLimitService implements RateLimitService {

  private final RateLimitService delegate;
  private final List<List<RateLimitRequest>> calls = new ArrayList<>();
  private String itemError = "";

  RecordingRateLimitService(Clock clock) {
    this.delegate =
        new LocalRateLimitService(
            new LocalLimiter(
                new RateLimitEngine(ZoneOffset.UTC), new InMemoryBucketStore(clock), clock),
            "127.0.0.1:1051");
  }

  @Override
  public CompletableFuture<List<RateLimitResponse>> decide(List<RateLimitRequest> requests) {
    String error;
    synchronized (this) {
      calls.add(List.copyOf(requests));
      error = itemError;
    }
    if (!error.isEmpty()) {
      List<RateLimitResponse> out = new ArrayList<>();
      requests.forEach(r -> out.add(RateLimitResponse.error(error)));
      return CompletableFuture.completedFuture(out);
    }
    return delegate.decide(requests);
  }

  /** Makes every later item answer {@code message} as its error. */
  synchronized void failItemsWith(String message) {
    this.itemError = message;
  }

  /** Returns every call so far. */
  synchronized List<List<RateLimitRequest>> calls() {
    return List.copyOf(calls);
  }
}
