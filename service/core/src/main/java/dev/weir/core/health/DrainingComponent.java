package dev.weir.core.health;

/**
 * The {@code draining} component: healthy until the node starts stopping, then unhealthy ("shutting
 * down") so that readiness fails first while calls are still answered.
 */
public final class DrainingComponent implements HealthComponent {

  /** The component's name. */
  public static final String NAME = "draining";

  /** The message of a stopping node. */
  public static final String SHUTTING_DOWN = "shutting down";

  private volatile boolean draining;

  /** Makes the component unhealthy from now on. */
  public void start() {
    draining = true;
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public ComponentHealth status() {
    return draining ? ComponentHealth.unhealthy(SHUTTING_DOWN) : ComponentHealth.ok();
  }
}
