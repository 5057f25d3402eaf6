package dev.weir.envoy.service;

import dev.weir.core.limiter.HealthStatus;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * A {@link RateLimitService} counting epoch-aligned fixed windows in memory (whatever the algorithm),
 * recording every call, and answering a per-item error when told to.
 */
final class FakeRateLimitService implements RateLimitService {

  private final Map<String, long[]> windows = new HashMap<>();
  private final List<List<RateLimitRequest>> calls = new ArrayList<>();
  private String itemError = "";

  @Override
  public synchronized CompletableFuture<List<RateLimitResponse>> check(
      List<RateLimitRequest> requests) {
    calls.add(List.copyOf(requests));
    List<RateLimitResponse> out = new ArrayList<>();
    for (RateLimitRequest r : requests) {
      if (!itemError.isEmpty()) {
        out.add(RateLimitResponse.error(itemError));
        continue;
      }
      long start = r.createdAt() - Math.floorMod(r.createdAt(), r.duration());
      long[] w = windows.computeIfAbsent(r.hashKey(), k -> new long[] {start, 0});
      if (w[0] != start) {
        w[0] = start;
        w[1] = 0;
      }
      w[1] += r.hits();
      boolean over = w[1] > r.limit();
      out.add(
          RateLimitResponse.of(
              over ? Status.OVER_LIMIT : Status.UNDER_LIMIT,
              r.limit(),
              over ? 0 : r.limit() - w[1],
              start + r.duration()));
    }
    return CompletableFuture.completedFuture(out);
  }

  @Override
  public HealthStatus health() {
    return new HealthStatus(true, "", 1, "fake", List.of("fake"));
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
