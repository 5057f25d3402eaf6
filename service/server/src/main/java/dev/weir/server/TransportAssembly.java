package dev.weir.server;

import dev.weir.core.config.HostPort;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.store.BucketStore;
import dev.weir.core.store.CacheStatistics;
import dev.weir.metrics.micrometer.JvmMetrics;
import dev.weir.metrics.micrometer.MicrometerMetrics;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.util.Optional;

/**
 * A node's transport, assembled: its tracing (null when off), meters, TLS, gRPC health and the
 * client gRPC listener bound to its port, with the address the node advertises for it. The first
 * part {@link WeirNode} starts; nothing in it knows the cluster.
 */
record TransportAssembly(
    NodeTracing tracing,
    PrometheusMeterRegistry registry,
    MicrometerMetrics metrics,
    CheckMeter meter,
    NodeTls tls,
    GrpcHealth grpcHealth,
    ClientGrpcListener grpc,
    HostPort advertise) {

  /**
   * Starts tracing (when on), the JVM metrics and the gRPC listener, recording each in {@code
   * components}, and writes the auto-TLS CA when the builder asks for it: once the gRPC address
   * has been bound and released ({@link BindFailure#probe}), so that a port in use fails before
   * the file of the node holding it is overwritten, and before the gRPC listener opens (after it,
   * when its port is 0: the default file's name and the logged address need the port it picked).
   */
  static TransportAssembly start(WeirNode.Builder b, BucketStore store, Lifecycle components)
      throws Exception {
    NodeTracing tracing =
        b.tracing.enabled()
            ? components.start("tracing", () -> NodeTracing.start(b.tracing), NodeTracing::close)
            : null;
    PrometheusMeterRegistry registry = PrometheusEndpoint.newRegistry();
    MicrometerMetrics metrics = metrics(registry, store);
    CheckMeter meter = new CheckMeter(metrics);
    components.start("JVM metrics", () -> new JvmMetrics(registry), JvmMetrics::close);
    NodeTls tls = NodeTls.load(b.ops.tls(), b.clientTls, b.config.advertiseAddress());
    GrpcHealth grpcHealth = new GrpcHealth(b.healthServiceNames);
    int configuredPort = b.config.grpcAddress().port();
    if (b.writeAutoCa && configuredPort != 0) {
      BindFailure.probe("gRPC", b.grpcAddressVariable, b.config.grpcAddress());
      writeAutoCa(b, tls, configuredPort);
    }
    ClientGrpcListener grpc =
        components.start(
            "gRPC listener",
            () -> startGrpc(b, tls, grpcHealth, metrics, tracing),
            listener -> listener.server().shutdownNow());
    int port = grpc.server().getPort();
    if (b.writeAutoCa && configuredPort == 0) {
      writeAutoCa(b, tls, port);
    }
    HostPort advertise = advertised(b, port);
    return new TransportAssembly(
        tracing, registry, metrics, meter, tls, grpcHealth, grpc, advertise);
  }

  /**
   * Writes the auto-TLS CA to the builder's file, else to the default file of {@code grpcPort},
   * and logs how clients of the gRPC listener at {@code grpcPort} trust it.
   */
  private static void writeAutoCa(WeirNode.Builder b, NodeTls tls, int grpcPort) {
    tls.writeAutoCa(
        b.autoCaFile != null ? b.autoCaFile : AutoCaFile.byDefault(grpcPort),
        advertised(b, grpcPort));
  }

  /** Returns the node's meters in {@code registry}, with the build and {@code store}'s cache. */
  private static MicrometerMetrics metrics(PrometheusMeterRegistry registry, BucketStore store) {
    BuildInfo.register(registry);
    MicrometerMetrics metrics = new MicrometerMetrics(registry);
    if (store instanceof CacheStatistics cache) {
      metrics.watchCache(cache);
    }
    return metrics;
  }

  private static ClientGrpcListener startGrpc(
      WeirNode.Builder b,
      NodeTls tls,
      GrpcHealth health,
      MicrometerMetrics metrics,
      NodeTracing tracing)
      throws IOException {
    ClientGrpcListener.Settings settings =
        new ClientGrpcListener.Settings(
            b.config.grpcAddress().toBindAddress(),
            b.ops.limits().maxGrpcMessageBytes(),
            tls.grpc(),
            b.envoy.enabled(),
            b.maxConnectionAge,
            b.maxConnectionAgeGrace,
            Optional.ofNullable(tracing).map(NodeTracing::frontDoor));
    try {
      return ClientGrpcListener.start(settings, health.service(), metrics, b.clock);
    } catch (IOException e) {
      throw BindFailure.isBindFailure(e)
          ? BindFailure.of("gRPC", b.grpcAddressVariable, b.config.grpcAddress(), e)
          : e;
    }
  }

  /** Returns the configured advertise address, at {@code grpcPort} when its port is 0. */
  private static HostPort advertised(WeirNode.Builder b, int grpcPort) {
    HostPort advertise = b.config.advertiseAddress();
    return advertise.port() == 0 ? advertise.withPort(grpcPort) : advertise;
  }
}
