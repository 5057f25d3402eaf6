package dev.weir.server;

import dev.weir.core.WeirMember;
import dev.weir.core.cluster.ClusterNode;
import dev.weir.core.health.DrainingComponent;
import dev.weir.core.health.HealthChecker;
import dev.weir.core.health.NodeHealth;
import dev.weir.core.store.BucketStore;
import dev.weir.core.toplimited.OverLimitRecorder;
import dev.weir.core.toplimited.TopLimited;
import dev.weir.core.toplimited.TopLimitedWindow;
import dev.weir.http.HttpRoute;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;

/**
 * A node's cluster member, assembled but not yet joined: the member on the transport's gRPC
 * listener, its meters and tracing, the top-limited view and where over-limit answers are
 * recorded, and the node's health with its draining component. {@link WeirNode} joins the member
 * only once the front doors serve.
 */
record ClusterAssembly(
    WeirMember member,
    ClusterNode node,
    OverLimitRecorder overLimit,
    HttpRoute topLimitedRoute,
    DrainingComponent draining) {

  /** Returns the node's health components, the draining one among them. */
  HealthChecker health() {
    return node.health();
  }

  /** Returns what {@code HealthCheck} reports of the node. */
  NodeHealth nodeHealth() {
    return node.nodeHealth();
  }

  /** Builds the member (and its discovery timers), recording each in {@code components}. */
  static ClusterAssembly start(
      WeirNode.Builder b, BucketStore store, TransportAssembly transport, Lifecycle components)
      throws Exception {
    ScheduledExecutorService discoveryTimers =
        components.start(
            "discovery timers",
            () -> Timers.daemonScheduler("weir-discovery"),
            ExecutorService::shutdownNow);
    WeirMember member =
        components.start(
            "cluster member",
            () ->
                NodeMember.build(
                    b.member(store),
                    transport.advertise(),
                    transport.grpc(),
                    transport.tls(),
                    discoveryTimers,
                    transport.metrics()),
            started -> started.close(Duration.ZERO));
    ClusterNode node = member.cluster();
    // Before the front doors serve: a call answered earlier would decide on a fresh bucket.
    node.restoreSnapshots();
    ClusterMetrics.watch(node, transport.metrics());
    TopLimited topLimited =
        b.topLimited.enabled()
            ? new TopLimited(
                new TopLimitedWindow(TopLimitedSettings.WINDOW_MINUTES, b.topLimited.counters()),
                b.clock)
            : null;
    if (topLimited != null) {
      node.topLimitedFrom(topLimited::view);
    }
    OverLimitRecorder overLimit =
        overLimitRecorder(topLimited, b.topLimited, transport.registry());
    HttpRoute topLimitedRoute =
        new TopLimitedRoute(topLimited, node, b.topLimited).route();
    if (transport.tracing() != null) {
      node.service().traceWith(transport.tracing().cluster());
      node.peers().traceWith(transport.tracing().cluster());
    }
    DrainingComponent draining = new DrainingComponent();
    node.health().add(draining);
    return new ClusterAssembly(member, node, overLimit, topLimitedRoute, draining);
  }

  /**
   * Returns where the front doors report over-limit answers: {@code topLimited} (null when off) and
   * the per-rule metric (unless {@code settings} turn it off).
   */
  private static OverLimitRecorder overLimitRecorder(
      TopLimited topLimited, TopLimitedSettings settings, PrometheusMeterRegistry registry) {
    OverLimitRecorder meter =
        settings.metricRules() > 0
            ? new OverLimitRuleMeter(registry, settings.metricRules())
            : OverLimitRecorder.NOOP;
    if (topLimited == null) {
      return meter;
    }
    if (meter == OverLimitRecorder.NOOP) {
      return topLimited;
    }
    return (key, hits) -> {
      topLimited.overLimit(key, hits);
      meter.overLimit(key, hits);
    };
  }
}
