package dev.weir.server;

import dev.weir.core.grpc.LateBoundService;
import dev.weir.core.grpc.MalformedRequests;
import dev.weir.core.grpc.StreamResets;
import dev.weir.core.metrics.GrpcServerMetrics;
import dev.weir.metrics.micrometer.MicrometerMetrics;
import dev.weir.core.time.Clock;
import dev.weir.gubernator.V1Methods;
import dev.weir.proto.ring.RingGrpc;
import dev.weir.tls.TlsIdentity;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaServiceGrpc;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.BindableService;
import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The client-facing gRPC listener, bound before the cluster member exists so that a configured
 * port of 0 is the port the node then advertises: it serves {@code grpc.health.v1} and server
 * reflection ({@code v1} and {@code v1alpha}) at once, and {@code pb.gubernator.V1}, {@code
 * weir.v1.Ring} and, with the Envoy adapter on, Envoy's {@code RateLimitService} and {@code
 * RateLimitQuotaService} from when {@link #serve} and its siblings name them (calls before are
 * answered {@code UNAVAILABLE}); with the adapter off, Envoy's calls are answered by {@link
 * EnvoyAdapterOff}. Calls run on the transport's event loops ({@code directExecutor}); a request
 * that cannot be parsed is answered {@code INVALID_ARGUMENT} ({@link MalformedRequests}).
 */
final class ClientGrpcListener {

  /** What the listener is built with. */
  record Settings(
      InetSocketAddress address,
      int maxMessageBytes,
      Optional<TlsIdentity> tls,
      boolean envoy,
      Duration maxConnectionAge,
      Duration maxConnectionAgeGrace,
      Optional<ServerInterceptor> tracing) {}

  /**
   * The largest request metadata (headers) accepted: twice Envoy's default limit on a request's
   * headers (60 KiB), since Envoy copies a client's trace context into its call when tracing is on;
   * grpc-java's default, 8 KiB, would refuse such a call and Envoy would let the request through.
   */
  static final int MAX_METADATA_BYTES = 128 * 1024;

  /**
   * The most calls one connection may have open at once (HTTP/2 {@code
   * SETTINGS_MAX_CONCURRENT_STREAMS}): far above what a proxy keeps open on one connection (its
   * calls per second times their latency), and Envoy opens another connection when it is reached;
   * it bounds what one connection can make the node hold (each call may buffer up to a message).
   */
  static final int MAX_CALLS_PER_CONNECTION = 1000;

  private final Server server;
  private final boolean traced;
  private final GrpcServerMetrics callMetrics;
  private final LateBoundService v1 = LateBoundService.of(V1Methods.SERVICE);
  private final LateBoundService ring = LateBoundService.of(RingGrpc.getServiceDescriptor());
  private final LateBoundService rateLimit =
      LateBoundService.of(RateLimitServiceGrpc.getServiceDescriptor());
  private final LateBoundService quota =
      LateBoundService.of(RateLimitQuotaServiceGrpc.getServiceDescriptor());

  private ClientGrpcListener(
      Settings settings, BindableService health, MicrometerMetrics metrics, Clock clock)
      throws IOException {
    this.callMetrics = new GrpcServerMetrics(metrics, clock);
    NettyServerBuilder builder =
        NettyServerBuilder.forAddress(settings.address())
            .directExecutor()
            .maxInboundMessageSize(settings.maxMessageBytes())
            .maxInboundMetadataSize(MAX_METADATA_BYTES)
            .maxConcurrentCallsPerConnection(MAX_CALLS_PER_CONNECTION)
            .maxRstFramesPerWindow(StreamResets.MAX_PER_WINDOW, StreamResets.WINDOW_SECONDS)
            .addStreamTracerFactory(callMetrics)
            .addService(MalformedRequests.guard(health))
            .addService(MalformedRequests.guard(ProtoReflectionServiceV1.newInstance()))
            .addService(MalformedRequests.guard(reflectionV1Alpha()))
            .addService(MalformedRequests.guard(traced(v1.definition(), settings)))
            .addService(MalformedRequests.guard(ring.definition()));
    if (settings.envoy()) {
      builder
          .addService(MalformedRequests.guard(traced(rateLimit.definition(), settings)))
          .addService(MalformedRequests.guard(quota.definition()));
    } else {
      builder.fallbackHandlerRegistry(EnvoyAdapterOff.grpcFallback());
    }
    if (settings.tls().isPresent()) {
      builder.sslContext(settings.tls().get().grpcServerContext());
    }
    if (settings.maxConnectionAge() != null) {
      builder
          .maxConnectionAge(settings.maxConnectionAge().toNanos(), TimeUnit.NANOSECONDS)
          .maxConnectionAgeGrace(
              settings.maxConnectionAgeGrace().toNanos(), TimeUnit.NANOSECONDS);
    }
    this.server = builder.build().start();
    this.traced = settings.tracing().isPresent();
  }

  /** Returns {@code service} traced when tracing is on, else {@code service} itself. */
  private static ServerServiceDefinition traced(
      ServerServiceDefinition service, Settings settings) {
    return settings.tracing().isPresent()
        ? ServerInterceptors.intercept(service, settings.tracing().get())
        : service;
  }

  /** Returns whether the front-door services are traced (an interceptor is installed). */
  boolean traced() {
    return traced;
  }

  /**
   * Binds {@code settings.address()} and starts serving {@code health} and reflection, counting
   * every call in {@code metrics}.
   *
   * @throws IOException when the address cannot be bound or the TLS context cannot be built
   */
  static ClientGrpcListener start(
      Settings settings, BindableService health, MicrometerMetrics metrics, Clock clock)
      throws IOException {
    return new ClientGrpcListener(settings, health, metrics, clock);
  }

  /** Returns the started server, whose port is the one bound. */
  Server server() {
    return server;
  }

  /**
   * Returns the token that keeps a start-up warm-up call out of the call metrics (see {@link
   * GrpcServerMetrics#WARM_UP_HEADER}).
   */
  String warmUpToken() {
    return callMetrics.warmUpToken();
  }

  /** Serves {@code pb.gubernator.V1} with {@code service} from now on. */
  void serve(BindableService service) {
    v1.bind(service);
  }

  /** Serves {@code weir.v1.Ring} with {@code service} from now on. */
  void serveRing(BindableService service) {
    ring.bind(service);
  }

  /**
   * Serves Envoy's {@code RateLimitService} with {@code service} from now on, leaving {@code
   * RateLimitQuotaService} as it is.
   */
  void serveRateLimit(BindableService service) {
    rateLimit.bind(service);
  }

  /**
   * Serves Envoy's {@code RateLimitService} with {@code rateLimitService} and {@code
   * RateLimitQuotaService} with {@code quotaService} from now on.
   */
  void serveEnvoy(BindableService rateLimitService, BindableService quotaService) {
    rateLimit.bind(rateLimitService);
    quota.bind(quotaService);
  }

  /**
   * Returns server reflection as {@code grpc.reflection.v1alpha}, which older grpcurl, Postman and
   * grpc-js reflection clients ask for; grpc-java keeps it deprecated in favour of {@code v1}.
   */
  @SuppressWarnings("deprecation")
  private static BindableService reflectionV1Alpha() {
    return io.grpc.protobuf.services.ProtoReflectionService.newInstance();
  }
}
