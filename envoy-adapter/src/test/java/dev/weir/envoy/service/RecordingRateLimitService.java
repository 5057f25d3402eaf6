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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;

/**
 * The real single-node {@link LocalRateLimitService} (engine and in-memory store on the given
 * clock), wrapped to record every call and to answer a per-item error when told to, as an
 * unreachable owner would.
 */
final class RecordingRateLimitService implements RateLimitService {

  private final RateLimitService delegate;
  private final List<List<RateLimitRequest>> calls = new ArrayList<>();
  private Map<Predicate<RateLimitRequest>, String> failing = Map.of();

  RecordingRateLimitService(Clock clock) {
    this.delegate =
        new LocalRateLimitService(
            new LocalLimiter(
                new RateLimitEngine(ZoneOffset.UTC), new InMemoryBucketStore(clock), clock),
            "127.0.0.1:1051");
  }

  @Override
  public CompletableFuture<List<RateLimitResponse>> decide(List<RateLimitRequest> requests) {
    Map<Predicate<RateLimitRequest>, String> fails;
    synchronized (this) {
      calls.add(List.copyOf(requests));
      fails = failing;
    }
    if (fails.isEmpty()) {
      return delegate.decide(requests);
    }
    List<RateLimitRequest> answered = new ArrayList<>();
    for (RateLimitRequest r : requests) {
      if (error(fails, r) == null) {
        answered.add(r);
      }
    }
    List<RateLimitResponse> answers =
        answered.isEmpty() ? List.of() : delegate.decide(answered).join();
    List<RateLimitResponse> out = new ArrayList<>(requests.size());
    int next = 0;
    for (RateLimitRequest r : requests) {
      String error = error(fails, r);
      out.add(error != null ? RateLimitResponse.error(error) : answers.get(next++));
    }
    return CompletableFuture.completedFuture(out);
  }

  /** Returns the error of the first of {@code fails} that accepts {@code r}; null when none does. */
  private static String error(Map<Predicate<RateLimitRequest>, String> fails, RateLimitRequest r) {
    for (Map.Entry<Predicate<RateLimitRequest>, String> e : fails.entrySet()) {
      if (e.getKey().test(r)) {
        return e.getValue();
      }
    }
    return null;
  }

  /** Makes every later item answer {@code message} as its error. */
  synchronized void failItemsWith(String message) {
    failItemsWith(message, r -> true);
  }

  /**
   * Makes every later item that {@code fails} accepts answer {@code message} as its error; the
   * others are answered as usual.
   */
  synchronized void failItemsWith(String message, Predicate<RateLimitRequest> fails) {
    failItemsWith(Map.of(fails, message));
  }

  /**
   * Makes every later item answer, as its error, the message of the first predicate of {@code
   * messages} (in iteration order) that accepts it; the others are answered as usual.
   */
  synchronized void failItemsWith(Map<Predicate<RateLimitRequest>, String> messages) {
    this.failing = new LinkedHashMap<>(messages);
  }

  /** Returns every call so far. */
  synchronized List<List<RateLimitRequest>> calls() {
    return List.copyOf(calls);
  }
}
