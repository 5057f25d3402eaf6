package dev.weir.server;

import dev.weir.core.health.NodeHealth;
import dev.weir.core.limiter.HealthStatus;
import java.util.function.BooleanSupplier;

/**
 * A {@link NodeHealth} that turns unhealthy ("shutting down") once the node starts stopping, while
 * calls are still answered: readiness fails first, traffic drains, then the listeners stop. Health
 * is also unhealthy while a condition set with {@link #requireConfig} is false ("no rate limit
 * configuration is loaded").
 */
final class DrainingHealth implements NodeHealth {

  /** The health message of a stopping node. */
  static final String SHUTTING_DOWN = "shutting down";

  /** The health message of a node whose Envoy adapter has no domain loaded. */
  static final String NO_CONFIG = "no rate limit configuration is loaded";

  private final NodeHealth delegate;
  private volatile boolean draining;
  private volatile BooleanSupplier configLoaded = () -> true;

  DrainingHealth(NodeHealth delegate) {
    this.delegate = delegate;
  }

  /**
   * Makes health report unhealthy ({@value #NO_CONFIG}) whenever {@code loaded} returns false, such
   * as the Envoy adapter's {@code hasDomains}.
   */
  void requireConfig(BooleanSupplier loaded) {
    this.configLoaded = loaded;
  }

  /** Makes health report unhealthy from now on. */
  void startDraining() {
    draining = true;
  }

  @Override
  public HealthStatus health() {
    HealthStatus health = delegate.health();
    if (draining) {
      return unhealthy(health, SHUTTING_DOWN);
    }
    if (!configLoaded.getAsBoolean()) {
      return unhealthy(
          health, health.message().isEmpty() ? NO_CONFIG : NO_CONFIG + "; " + health.message());
    }
    return health;
  }

  private static HealthStatus unhealthy(HealthStatus health, String message) {
    return new HealthStatus(
        false, message, health.peerCount(), health.advertiseAddress(), health.peers());
  }
}
