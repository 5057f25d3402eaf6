package dev.weir.core.health;

import java.util.Objects;
import java.util.function.BooleanSupplier;

/**
 * The {@code config} component of a node serving Envoy: unhealthy, so not ready, while no
 * descriptor config with a domain is loaded (a start forced without one, until a reload brings
 * one).
 */
public final class ConfigComponent implements HealthComponent {

  /** The component's name. */
  public static final String NAME = "config";

  /** Its message while no config is loaded. */
  public static final String NOT_LOADED = "no rate limit configuration is loaded";

  private final BooleanSupplier loaded;

  /** Creates the component, healthy while {@code loaded} (such as the Envoy adapter's) is true. */
  public ConfigComponent(BooleanSupplier loaded) {
    this.loaded = Objects.requireNonNull(loaded, "loaded");
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public ComponentHealth status() {
    return loaded.getAsBoolean() ? ComponentHealth.ok() : ComponentHealth.unhealthy(NOT_LOADED);
  }
}
