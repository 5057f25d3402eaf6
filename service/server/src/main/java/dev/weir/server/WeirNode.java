package dev.weir.server;

import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.http.HttpListener;
import dev.weir.core.http.HttpRoute;
import dev.weir.core.limiter.HealthStatus;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.limiter.LocalRateLimitService;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.store.BucketStore;
import dev.weir.core.store.CaffeineBucketStore;
import dev.weir.core.time.Clock;
import dev.weir.core.time.SystemClock;
import dev.weir.gubernator.V1Service;
import dev.weir.gubernator.http.GatewayRoutes;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.Server;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running Weir node: the rate-limit service, its gRPC listener ({@code pb.gubernator.V1},
 * {@code grpc.health.v1}, server reflection) and its HTTP listener (the JSON gateway). Start it
 * with {@link #start}; {@link #close} stops both listeners gracefully.
 *
 * <p>A configured port of 0 takes a free port; read it back with {@link #grpcPort()} and {@link
 * #httpPort()}. An advertised address with port 0 advertises the gRPC port actually used.
 */
public final class WeirNode implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(WeirNode.class);
  private static final long HEALTH_REFRESH_MILLIS = 1000;
  private static final long GRPC_GRACE_SECONDS = 5;
  private static final Duration HTTP_GRACE = Duration.ofSeconds(1);

  private final RateLimitService service;
  private final Server grpc;
  private final HttpListener http;
  private final HealthStatusManager grpcHealth;
  private final ScheduledExecutorService healthRefresher;
  private final HostPort advertiseAddress;
  private final AtomicBoolean closed = new AtomicBoolean();

  private WeirNode(
      RateLimitService service,
      Server grpc,
      HttpListener http,
      HealthStatusManager grpcHealth,
      HostPort advertiseAddress) {
    this.service = service;
    this.grpc = grpc;
    this.http = http;
    this.grpcHealth = grpcHealth;
    this.advertiseAddress = advertiseAddress;
    this.healthRefresher =
        Executors.newSingleThreadScheduledExecutor(
            runnable -> {
              Thread thread = new Thread(runnable, "weir-health");
              thread.setDaemon(true);
              return thread;
            });
  }

  /**
   * Starts a node on the system clock with a Caffeine store of {@code config.cacheSize()} buckets.
   */
  public static WeirNode start(WeirConfig config) throws IOException {
    Clock clock = SystemClock.INSTANCE;
    return start(config, clock, new CaffeineBucketStore(clock, config.cacheSize()));
  }

  /** Starts a node deciding at {@code clock}'s time over {@code store}. */
  public static WeirNode start(WeirConfig config, Clock clock, BucketStore store)
      throws IOException {
    HostPort grpcAddress = config.grpcAddress();
    if (grpcAddress.port() == 0) {
      grpcAddress = grpcAddress.withPort(freePort(grpcAddress.toBindAddress()));
    }
    HostPort advertise = config.advertiseAddress();
    if (advertise.port() == 0) {
      advertise = advertise.withPort(grpcAddress.port());
    }
    LocalLimiter limiter =
        new LocalLimiter(new RateLimitEngine(ZoneId.systemDefault()), store, clock);
    RateLimitService service = new LocalRateLimitService(limiter, advertise.toString());
    HealthStatusManager grpcHealth = new HealthStatusManager();
    Server grpc =
        NettyServerBuilder.forAddress(grpcAddress.toBindAddress())
            .addService(new V1Service(service))
            .addService(grpcHealth.getHealthService())
            .addService(ProtoReflectionServiceV1.newInstance())
            .build()
            .start();
    HttpListener http;
    try {
      http = HttpListener.start(config.httpAddress().toBindAddress(), httpRoutes(service));
    } catch (IOException | RuntimeException e) {
      grpc.shutdownNow();
      throw e;
    }
    WeirNode node = new WeirNode(service, grpc, http, grpcHealth, advertise);
    node.refreshHealth();
    node.healthRefresher.scheduleWithFixedDelay(
        node::refreshHealthQuietly,
        HEALTH_REFRESH_MILLIS,
        HEALTH_REFRESH_MILLIS,
        TimeUnit.MILLISECONDS);
    return node;
  }

  private static List<HttpRoute> httpRoutes(RateLimitService service) {
    return new ArrayList<>(new GatewayRoutes(service).routes());
  }

  private static int freePort(InetSocketAddress address) throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, address.getAddress())) {
      return socket.getLocalPort();
    }
  }

  /**
   * Sets the {@code grpc.health.v1} status of the node and of {@code pb.gubernator.V1} from health.
   */
  void refreshHealth() {
    HealthStatus health = service.health();
    ServingStatus status = health.healthy() ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
    grpcHealth.setStatus(HealthStatusManager.SERVICE_NAME_ALL_SERVICES, status);
    grpcHealth.setStatus(V1Grpc.SERVICE_NAME, status);
  }

  private void refreshHealthQuietly() {
    try {
      refreshHealth();
    } catch (RuntimeException e) {
      LOG.warn("health refresh failed", e);
    }
  }

  /** Returns the port the gRPC listener is bound to. */
  public int grpcPort() {
    return grpc.getPort();
  }

  /** Returns the port the HTTP listener is bound to. */
  public int httpPort() {
    return http.port();
  }

  /** Returns the gRPC address this node advertises. */
  public HostPort advertiseAddress() {
    return advertiseAddress;
  }

  /** Returns the node's rate-limit service. */
  public RateLimitService service() {
    return service;
  }

  /** Blocks until the gRPC listener has terminated. */
  public void awaitTermination() throws InterruptedException {
    grpc.awaitTermination();
  }

  /**
   * Stops the node: reports NOT_SERVING, stops the HTTP listener (up to 1 s for exchanges in
   * flight), then the gRPC listener (up to 5 s for calls in flight). Calling it again does nothing.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    healthRefresher.shutdownNow();
    grpcHealth.enterTerminalState();
    http.stop(HTTP_GRACE);
    grpc.shutdown();
    try {
      if (!grpc.awaitTermination(GRPC_GRACE_SECONDS, TimeUnit.SECONDS)) {
        grpc.shutdownNow();
      }
    } catch (InterruptedException e) {
      grpc.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }
}
