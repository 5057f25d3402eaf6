package dev.weir.core.cluster;

import dev.weir.core.health.HealthChecker;
import dev.weir.core.health.HealthReport;
import dev.weir.core.health.HealthStatus;
import dev.weir.core.health.NodeHealth;
import java.util.List;
import java.util.function.Supplier;

/**
 * A cluster member's health as Gubernator's {@code HealthCheck} reports it: healthy while every
 * component is (a peer that is down or failing makes it unhealthy, as in Gubernator, although it
 * does not fail readiness), the components' messages, and the members (discovered, not departed,
 * down or not) as {@code peer_count} and {@code local_peers}, in the data center discovery reports.
 */
public final class ClusterHealth implements NodeHealth {

  private final String self;
  private final Membership membership;
  private final HealthChecker checker;
  private final Supplier<String> dataCenter;

  /**
   * Creates the health of member {@code self} of {@code membership}, from {@code checker}, its
   * members in the data center {@code dataCenter} supplies.
   */
  public ClusterHealth(
      String self, Membership membership, HealthChecker checker, Supplier<String> dataCenter) {
    this.self = self;
    this.membership = membership;
    this.checker = checker;
    this.dataCenter = dataCenter;
  }

  @Override
  public HealthStatus health() {
    HealthReport report = checker.report();
    List<String> members = List.copyOf(membership.members());
    return new HealthStatus(
        report.healthy(), report.message(), members.size(), self, members, dataCenter.get());
  }
}
