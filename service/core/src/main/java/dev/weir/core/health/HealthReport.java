package dev.weir.core.health;

import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The state of every component of a node at one moment, in registration order.
 *
 * @param components each component's name, whether it gates readiness, and its state
 */
public record HealthReport(List<Entry> components) {

  /** One component's line of the report. */
  public record Entry(String name, boolean gatesReadiness, ComponentHealth health) {}

  /** Creates a report, copying {@code components}. */
  public HealthReport {
    components = List.copyOf(components);
  }

  /** Returns whether the node can answer: every component that gates readiness is healthy. */
  public boolean ready() {
    return components.stream().allMatch(e -> !e.gatesReadiness() || e.health().healthy());
  }

  /**
   * Returns whether every component is healthy, peers included: Gubernator's {@code HealthCheck}
   * status.
   */
  public boolean healthy() {
    return components.stream().allMatch(e -> e.health().healthy());
  }

  /**
   * Returns every component's non-empty message joined by {@code |}: first those of the components
   * that gate readiness, then the others, each group in registration order.
   */
  public String message() {
    return Stream.concat(
            components.stream().filter(Entry::gatesReadiness),
            components.stream().filter(e -> !e.gatesReadiness()))
        .map(e -> e.health().message())
        .filter(m -> !m.isEmpty())
        .collect(Collectors.joining("|"));
  }
}
