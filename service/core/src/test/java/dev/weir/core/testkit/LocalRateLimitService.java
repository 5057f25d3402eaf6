package dev.weir.core.testkit;

import dev.weir.core.engine.RequestValidator;
import dev.weir.core.health.HealthStatus;
import dev.weir.core.health.NodeHealth;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.limiter.RequestTooLargeException;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * A test's {@link RateLimitService} of a node that is its own cluster: every bucket lives here,
 * every item is answered by the {@link LocalLimiter} on the caller's thread, as production's
 * {@code ClusterRateLimitService} answers the items a node owns.
 */
public final class LocalRateLimitService implements RateLimitService, NodeHealth {

  private final LocalLimiter limiter;
  private final String advertiseAddress;

  /**
   * Creates the service answering with {@code limiter}; {@code advertiseAddress} is reported by
   * health.
   */
  public LocalRateLimitService(LocalLimiter limiter, String advertiseAddress) {
    this.limiter = Objects.requireNonNull(limiter, "limiter");
    this.advertiseAddress = Objects.requireNonNull(advertiseAddress, "advertiseAddress");
  }

  @Override
  public CompletableFuture<List<RateLimitResponse>> decide(List<RateLimitRequest> requests) {
    if (RateLimitService.tooManyItems(requests.size())) {
      return CompletableFuture.failedFuture(RequestTooLargeException.overBatchSize());
    }
    List<RateLimitResponse> responses = new ArrayList<>(requests.size());
    for (RateLimitRequest request : requests) {
      Optional<String> itemError = RequestValidator.validate(request);
      responses.add(
          itemError.isPresent()
              ? RateLimitResponse.error(itemError.get())
              : limiter.decide(request));
    }
    return CompletableFuture.completedFuture(responses);
  }

  /** Returns healthy with a peer count of 1: this node, at its advertised address. */
  @Override
  public HealthStatus health() {
    return new HealthStatus(true, "", 1, advertiseAddress, List.of(advertiseAddress));
  }
}
