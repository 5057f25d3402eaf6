package dev.weir.core.health;

import java.util.Objects;

/**
 * One health component's state at one moment: whether it is healthy, and what it has to say.
 *
 * @param healthy whether the component is well; an unhealthy component that {@linkplain
 *     HealthComponent#gatesReadiness() gates readiness} makes the node not ready
 * @param message why it is unhealthy, or a problem worth reporting that does not make it unhealthy
 *     (for example discovery degraded after joining); empty when all is well
 */
public record ComponentHealth(boolean healthy, String message) {

  private static final ComponentHealth OK = new ComponentHealth(true, "");

  /** Creates a state, requiring a message. */
  public ComponentHealth {
    Objects.requireNonNull(message, "message");
  }

  /** Returns the state of a component with nothing to report. */
  public static ComponentHealth ok() {
    return OK;
  }

  /** Returns the state of a healthy component reporting {@code note} (ok when it is empty). */
  public static ComponentHealth ok(String note) {
    return note.isEmpty() ? OK : new ComponentHealth(true, note);
  }

  /** Returns the state of an unhealthy component, {@code reason} saying why. */
  public static ComponentHealth unhealthy(String reason) {
    return new ComponentHealth(false, reason);
  }
}
