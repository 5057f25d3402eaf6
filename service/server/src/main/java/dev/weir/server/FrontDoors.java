package dev.weir.server;

import dev.weir.core.health.HealthChecker;
import dev.weir.core.health.NodeHealth;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.time.Clock;
import dev.weir.core.toplimited.OverLimitRecorder;
import dev.weir.envoy.EnvoyAdapter;
import dev.weir.envoy.rlqs.RlqsService;
import dev.weir.envoy.rlqs.RlqsSettings;
import dev.weir.gubernator.NativeCheck;
import dev.weir.gubernator.NativeTracing;
import dev.weir.gubernator.RingService;
import dev.weir.gubernator.V1Service;
import dev.weir.gubernator.http.GatewayRoutes;
import dev.weir.http.HttpRoute;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * A node's front doors on the request path of its cluster member: {@code pb.gubernator.V1},
 * {@code weir.v1.Ring} and, with the Envoy adapter on, Envoy's services on the client gRPC
 * listener, and the routes of the HTTP listener.
 *
 * @param routes the JSON gateway, readiness, metrics, the build, the status page and its JSON
 *     ({@link StatusPage}, {@link StatusRoute}, {@link ExplainRoute}), the extra routes and Envoy's
 *     {@code POST /json} (answered by {@link EnvoyAdapterOff} when the adapter is off)
 * @param rlqs Envoy's quota service, null when the adapter is off
 */
record FrontDoors(List<HttpRoute> routes, RlqsService rlqs) {

  /**
   * What the front doors check requests against and count them in, where they report over-limit
   * answers, and how native calls' answers are traced ({@link NativeTracing#NONE} with tracing
   * off).
   */
  record Settings(
      InputLimits limits,
      RlqsSettings rlqs,
      Clock clock,
      CheckMeter meter,
      PrometheusMeterRegistry registry,
      Function<HealthChecker, List<HttpRoute>> extraRoutes,
      OverLimitRecorder overLimit,
      NativeTracing tracing) {}

  /**
   * Serves {@code member}'s request path on {@code grpc} and returns the front doors; with {@code
   * envoy} not null, registers its quota service as the receiver of the shares owners push.
   */
  static FrontDoors serve(
      RateLimitService service,
      ClusterAssembly cluster,
      EnvoyAdapter envoy,
      ClientGrpcListener grpc,
      Settings settings) {
    NodeHealth nodeHealth = cluster.nodeHealth();
    NativeCheck check =
        new NativeCheck(
            service, settings.limits(), settings.meter(), settings.overLimit(), settings.tracing());
    grpc.serve(new V1Service(check, nodeHealth));
    grpc.serveRing(
        new RingService(cluster.node().membership()::ring, cluster.node().self()));
    List<HttpRoute> routes = new ArrayList<>(new GatewayRoutes(check, nodeHealth).routes());
    routes.add(ReadinessRoute.of(cluster.health()));
    routes.add(new PrometheusEndpoint(settings.registry()).route());
    routes.add(BuildInfo.route());
    routes.add(new StatusRoute(cluster.node(), envoy, settings.registry()).route());
    routes.add(
        new ExplainRoute(envoy, settings.limits(), service, settings.clock()).route());
    routes.addAll(StatusPage.routes());
    routes.addAll(settings.extraRoutes().apply(cluster.health()));
    if (envoy == null) {
      routes.add(EnvoyAdapterOff.jsonRoute());
      return new FrontDoors(routes, null);
    }
    RlqsService rlqs =
        envoy.rlqs(
            cluster.node().quota()::report,
            cluster.node().self(),
            settings.rlqs(),
            settings.limits(),
            settings.clock(),
            settings.registry());
    cluster.node().quota().receiveWith(rlqs);
    grpc.serveEnvoy(envoy.grpcService(), rlqs);
    routes.addAll(envoy.httpRoutes());
    return new FrontDoors(routes, rlqs);
  }

  /**
   * Ends the RLQS streams with {@code UNAVAILABLE} and refuses new ones: their proxies keep their
   * assignments and reconnect to another node at their next report.
   */
  void drainStreams() {
    if (rlqs != null) {
      rlqs.drain();
    }
  }
}
