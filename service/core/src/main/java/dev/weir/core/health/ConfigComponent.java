package dev.weir.core.health;

/**
 * The {@code config} component of a node serving Envoy: unhealthy, so not ready, while no
 * descriptor config is loaded. It starts healthy, as the Envoy adapter starts only once a config
 * has loaded; whatever learns that none is loaded any more calls {@link #notLoaded}, then {@link
 * #loaded} when one is.
 */
public final class ConfigComponent implements HealthComponent {

  /** The component's name. */
  public static final String NAME = "config";

  private volatile String problem = "";

  /** Reports that a config is loaded. */
  public void loaded() {
    problem = "";
  }

  /** Reports that no config is loaded, {@code reason} saying why (e.g. the folder is empty). */
  public void notLoaded(String reason) {
    problem = reason.isEmpty() ? "no descriptor config loaded" : reason;
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public ComponentHealth check() {
    String p = problem;
    return p.isEmpty() ? ComponentHealth.ok() : ComponentHealth.unhealthy(p);
  }
}
