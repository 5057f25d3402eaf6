package dev.weir.core.health;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A node's health as a list of named {@link HealthComponent}s, checked together: readiness, gRPC
 * health and Gubernator's {@code HealthCheck} all read {@link #report()}. Modelled on
 * envoyproxy/ratelimit's {@code HealthChecker}, which fails readiness while any of its components
 * is unhealthy.
 */
public final class HealthChecker {

  private final List<HealthComponent> components = new CopyOnWriteArrayList<>();

  /**
   * Adds {@code component} after those added before; returns this checker.
   *
   * @throws IllegalArgumentException if a component of the same name is already registered
   */
  public HealthChecker add(HealthComponent component) {
    for (HealthComponent c : components) {
      if (c.name().equals(component.name())) {
        throw new IllegalArgumentException(
            "a health component named '" + component.name() + "' is already registered");
      }
    }
    components.add(component);
    return this;
  }

  /** Returns every component's status now. */
  public HealthReport report() {
    List<HealthReport.Entry> entries = new ArrayList<>(components.size());
    for (HealthComponent c : components) {
      entries.add(new HealthReport.Entry(c.name(), c.gatesReadiness(), c.status()));
    }
    return new HealthReport(entries);
  }

  /** Returns whether the node is ready now: see {@link HealthReport#ready()}. */
  public boolean ready() {
    return report().ready();
  }
}
