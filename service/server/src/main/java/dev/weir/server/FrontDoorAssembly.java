package dev.weir.server;

import dev.weir.core.WeirMember;
import dev.weir.core.config.EnvVar;
import dev.weir.core.config.HostPort;
import dev.weir.core.health.ConfigComponent;
import dev.weir.core.health.HealthChecker;
import dev.weir.core.health.NodeHealth;
import dev.weir.envoy.EnvoyAdapter;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.service.MatchTracing;
import dev.weir.gubernator.NativeTracing;
import dev.weir.http.HttpListener;
import dev.weir.http.HttpRoute;
import dev.weir.metrics.micrometer.MicrometerMetrics;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;

/**
 * A node's front doors, assembled: the Envoy adapter (null when off), the listeners that drain
 * together when the node stops, what the start-up warm-up did (null when it did not run) and the
 * services served on the gRPC port. The HTTP and status listeners open later, through {@link
 * #openHttp} and {@link #openStatus}, once the member has joined.
 */
record FrontDoorAssembly(
    EnvoyAdapter envoy, Listeners listeners, NodeWarmUp.Result warmUp, FrontDoors doors) {

  /** The most the status listener waits for its requests in flight when stopping. */
  static final long STATUS_GRACE_MILLIS = 1000;

  private static final Duration STATUS_GRACE = Duration.ofMillis(STATUS_GRACE_MILLIS);

  /**
   * Starts the Envoy adapter (when on), checks that the HTTP and status addresses are free before a
   * warm-up, warms up (when asked) and serves the front doors on the gRPC port.
   */
  static FrontDoorAssembly start(
      WeirNode.Builder b,
      TransportAssembly transport,
      ClusterAssembly cluster,
      Lifecycle components)
      throws Exception {
    WeirMember member = cluster.member();
    // The reloads' timer starts before the adapter and the listeners, so it stops after them: the
    // config keeps reloading until every listener has drained, and the closed adapter schedules
    // nothing more on it.
    ScheduledExecutorService reloads =
        b.envoy.enabled()
            ? components.start(
                "Envoy config reloads",
                () -> Timers.daemonScheduler("weir-envoy-config"),
                ExecutorService::shutdownNow)
            : null;
    EnvoyAdapter envoy =
        b.envoy.enabled()
            ? components.start(
                "Envoy adapter",
                () -> envoy(b, member, transport, cluster),
                EnvoyAdapter::close)
            : null;
    if (envoy != null && b.readyNeedsDomain) {
      cluster.health().add(new ConfigComponent(envoy::hasDomains));
    }
    if (envoy != null) {
      envoy.watch(reloads);
    }
    Listeners listeners =
        components.start("listeners", Listeners::new, all -> all.stop(b.ops.drainTimeout()));
    listeners.add("grpc", member::stopServer);
    // The HTTP and status listeners open after the node joins: a taken port is found before.
    BindFailure.probe("HTTP", b.httpAddressVariable, b.config.httpAddress());
    if (b.ops.statusAddress().isPresent()) {
      BindFailure.probe("status", b.statusAddressVariable, b.ops.statusAddress().get());
    }
    NodeWarmUp.Result warmUp = null;
    if (!b.warmUp.isZero()) {
      warmUp =
          NodeWarmUp.run(
              b.warmUp,
              b.clock,
              transport.grpc(),
              transport.tls().grpc().isPresent(),
              envoy,
              b.ops.limits(),
              b.stopRequested);
    }
    FrontDoors doors =
        FrontDoors.serve(
            member.service(),
            cluster,
            envoy,
            transport.grpc(),
            b.frontDoors(
                transport.meter(),
                transport.registry(),
                cluster.overLimit(),
                transport.tracing() == null
                    ? NativeTracing.NONE
                    : transport.tracing().nativeCalls()));
    doors.routes().add(cluster.topLimitedRoute());
    if (transport.tracing() != null) {
      doors.routes().replaceAll(transport.tracing().http()::trace);
    }
    return new FrontDoorAssembly(envoy, listeners, warmUp, doors);
  }

  private static EnvoyAdapter envoy(
      WeirNode.Builder b, WeirMember member, TransportAssembly transport, ClusterAssembly cluster)
      throws dev.weir.envoy.config.DescriptorConfigException {
    return EnvoyAdapter.start(
        b.envoy,
        member.service(),
        b.clock,
        new EnvoyMetrics(transport.registry(), b.envoyObserver),
        b.ops.limits(),
        transport.meter(),
        cluster.overLimit(),
        transport.tracing() == null ? MatchTracing.NONE : transport.tracing().configMatch());
  }

  /**
   * Opens the HTTP listener serving the front doors' routes, over HTTPS with the node's identity
   * and client-auth mode when TLS is on.
   */
  HttpListener openHttp(WeirNode.Builder b, TransportAssembly transport) throws Exception {
    return listeners.open(
        "http",
        () -> startHttp(b, doors.routes(), transport.tls(), transport.metrics()),
        HttpListener::stop);
  }

  /** Opens the status listener when {@code WEIR_STATUS_HTTP_ADDRESS} is set; null otherwise. */
  StatusListener openStatus(
      WeirNode.Builder b, TransportAssembly transport, ClusterAssembly cluster) throws Exception {
    if (b.ops.statusAddress().isEmpty()) {
      return null;
    }
    return listeners.open(
        "status",
        () ->
            startStatus(
                b.ops,
                b.statusAddressVariable,
                cluster.nodeHealth(),
                cluster.health(),
                transport.tls(),
                transport.registry(),
                cluster.topLimitedRoute()),
        StatusListener::stop,
        STATUS_GRACE);
  }

  private static HttpListener startHttp(
      WeirNode.Builder b, List<HttpRoute> routes, NodeTls tls, MicrometerMetrics metrics)
      throws IOException, GeneralSecurityException {
    HttpListener.Builder listener =
        HttpListener.builder(b.config.httpAddress().toBindAddress())
            .routes(routes)
            .settings(b.ops.http())
            .metrics(metrics, b.clock);
    if (tls.node().isPresent()) {
      listener.tls(tls.node().get().httpsEngines());
    }
    try {
      return listener.start();
    } catch (IOException e) {
      throw BindFailure.isBindFailure(e)
          ? BindFailure.of("HTTP", b.httpAddressVariable, b.config.httpAddress(), e)
          : e;
    }
  }

  private static StatusListener startStatus(
      OpsSettings ops,
      EnvVar statusVariable,
      NodeHealth nodeHealth,
      HealthChecker health,
      NodeTls tls,
      PrometheusMeterRegistry registry,
      HttpRoute topLimited)
      throws IOException, GeneralSecurityException {
    HostPort address = ops.statusAddress().orElseThrow();
    try {
      return StatusListener.start(
          address,
          nodeHealth,
          health,
          registry,
          tls.node().orElse(null),
          ops.http(),
          List.of(topLimited));
    } catch (IOException e) {
      throw BindFailure.isBindFailure(e) ? BindFailure.of("status", statusVariable, address, e) : e;
    }
  }
}
