package dev.weir.server;

import dev.weir.core.health.NodeHealth;
import dev.weir.core.limiter.HealthStatus;

/**
 * A {@link NodeHealth} that turns unhealthy ("shutting down") once the node starts stopping, while
 * calls are still answered: readiness fails first, traffic drains, then the listeners stop.
 */
final class DrainingHealth implements NodeHealth {

  /** The health message of a stopping node. */
  static final String SHUTTING_DOWN = "shutting down";

  private final NodeHealth delegate;
  private volatile boolean draining;

  DrainingHealth(NodeHealth delegate) {
    this.delegate = delegate;
  }

  /** Makes health report unhealthy from now on. */
  void startDraining() {
    draining = true;
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
