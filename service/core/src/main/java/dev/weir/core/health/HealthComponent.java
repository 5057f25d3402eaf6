package dev.weir.core.health;

import java.util.Objects;
import java.util.function.Supplier;

/**
 * One named part of a node's health (discovery, draining, config, peers), asked for its {@link
 * #status()} by a {@link HealthChecker}, as envoyproxy/ratelimit's health checker checks its
 * components. Health has its own verb: {@code check} is the decision verb of the request ports.
 */
public interface HealthComponent {

  /** Returns the component's name as reports show it, e.g. {@code discovery}. */
  String name();

  /** Returns the component's current state; cheap, calling no peer and doing no I/O. */
  ComponentHealth status();

  /**
   * Returns whether this component being unhealthy makes the node not ready. True by default; the
   * {@code peers} component is reported but never fails readiness, since one peer's trouble must
   * not take the healthy nodes out of service.
   */
  default boolean gatesReadiness() {
    return true;
  }

  /**
   * Returns a component named {@code name} that gates readiness and reports what {@code status}
   * says.
   */
  static HealthComponent of(String name, Supplier<ComponentHealth> status) {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(status, "status");
    return new HealthComponent() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public ComponentHealth status() {
        return status.get();
      }
    };
  }
}
