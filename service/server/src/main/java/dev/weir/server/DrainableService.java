package dev.weir.server;

import dev.weir.core.limiter.HealthStatus;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A {@link RateLimitService} whose health turns unhealthy ("shutting down") once the node starts
 * stopping, while calls are still answered: readiness fails first, traffic drains, then the
 * listeners stop.
 */
final class DrainableService implements RateLimitService {

  /** The health message of a stopping node. */
  static final String SHUTTING_DOWN = "shutting down";

  private final RateLimitService delegate;
  private volatile boolean draining;

  DrainableService(RateLimitService delegate) {
    this.delegate = delegate;
  }

  /** Makes health report unhealthy from now on. */
  void startDraining() {
    draining = true;
  }

  @Override
  public CompletableFuture<List<RateLimitResponse>> check(List<RateLimitRequest> requests) {
    return delegate.check(requests);
  }

  @Override
  public HealthStatus health() {
    HealthStatus health = delegate.health();
    if (!draining) {
      return health;
    }
    return new HealthStatus(
        false, SHUTTING_DOWN, health.peerCount(), health.advertiseAddress(), health.peers());
  }
}
