package dev.weir.gubernator;

import dev.weir.core.health.HealthStatus;
import dev.weir.core.health.NodeHealth;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * A {@link RateLimitService} for mapping tests: records every call and by default answers each item
 * UNDER_LIMIT with {@code remaining = limit - hits}, {@code reset_time = created_at} and the item's
 * metadata echoed.
 */
public final class FakeRateLimitService implements RateLimitService, NodeHealth {

  /** Every call's items, in order. */
  public final List<List<RateLimitRequest>> calls = new ArrayList<>();

  /** The answer to a call; replace to simulate failures. */
  public Function<List<RateLimitRequest>, CompletableFuture<List<RateLimitResponse>>> answer =
      FakeRateLimitService::echo;

  /** The health to report. */
  public HealthStatus health =
      new HealthStatus(true, "", 1, "127.0.0.1:1051", List.of("127.0.0.1:1051"));

  @Override
  public CompletableFuture<List<RateLimitResponse>> decide(List<RateLimitRequest> requests) {
    calls.add(List.copyOf(requests));
    return answer.apply(requests);
  }

  @Override
  public HealthStatus health() {
    return health;
  }

  private static CompletableFuture<List<RateLimitResponse>> echo(List<RateLimitRequest> requests) {
    List<RateLimitResponse> responses = new ArrayList<>();
    for (RateLimitRequest r : requests) {
      responses.add(
          new RateLimitResponse(
              Status.UNDER_LIMIT,
              r.limit(),
              r.limit() - r.hits(),
              r.createdAt(),
              "",
              Map.copyOf(r.metadata())));
    }
    return CompletableFuture.completedFuture(responses);
  }
}
