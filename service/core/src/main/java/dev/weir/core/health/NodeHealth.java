package dev.weir.core.health;

import dev.weir.core.limiter.HealthStatus;

/**
 * A source of this node's health as Gubernator's {@code HealthCheck} reports it, kept apart from
 * the request path so that no decorator of {@link dev.weir.core.limiter.RateLimitService} has to
 * carry it. Readiness is not this: it is {@link HealthChecker#ready()}, which a peer's trouble
 * never fails.
 */
@FunctionalInterface
public interface NodeHealth {

  /** Returns this node's current view of its own and the cluster's health. */
  HealthStatus health();
}
