package dev.weir.server;

import dev.weir.core.cluster.ClusterNode;
import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.batch.ExecutorScheduler;
import dev.weir.core.config.HostPort;
import dev.weir.core.discovery.StaticDiscovery;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.http.HttpListener;
import dev.weir.core.http.HttpRoute;
import dev.weir.core.limiter.HealthStatus;
import dev.weir.core.limiter.LocalLimiter;
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
  private static final Duration LEAVE_WAIT = Duration.ofSeconds(5);

  private final RateLimitService service;
  private final ClusterNode cluster;
  private final ExecutorScheduler scheduler;
  private final Server grpc;
  private final HttpListener http;
  private final HealthStatusManager grpcHealth;
  private final ScheduledExecutorService healthRefresher;
  private final HostPort advertiseAddress;
  private final AtomicBoolean closed = new AtomicBoolean();

  private WeirNode(
      ClusterNode cluster,
      ExecutorScheduler scheduler,
      Server grpc,
      HttpListener http,
      HealthStatusManager grpcHealth,
      HostPort advertiseAddress) {
    this.cluster = cluster;
    this.scheduler = scheduler;
    this.service = cluster.service();
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
    return start(config, ClusterSettings.defaults());
  }

  /** Starts a cluster member with {@code clusterSettings} (static peers) and a Caffeine store. */
  public static WeirNode start(WeirConfig config, ClusterSettings clusterSettings)
      throws IOException {
    Clock clock = SystemClock.INSTANCE;
    return start(
        config, clusterSettings, clock, new CaffeineBucketStore(clock, config.cacheSize()));
  }

  /** Starts a single node deciding at {@code clock}'s time over {@code store}. */
  public static WeirNode start(WeirConfig config, Clock clock, BucketStore store)
      throws IOException {
    return start(config, ClusterSettings.defaults(), clock, store);
  }

  /**
   * Starts a cluster member deciding at {@code clock}'s time over {@code store}: it serves {@code
   * PeersV1} next to {@code V1} on the gRPC port, joins the peers of {@code clusterSettings}, then
   * opens the HTTP listener.
   */
  public static WeirNode start(
      WeirConfig config, ClusterSettings clusterSettings, Clock clock, BucketStore store)
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
    ExecutorScheduler scheduler = new ExecutorScheduler("weir-cluster", 2);
    StaticDiscovery discovery =
        new StaticDiscovery(advertise.toString(), clusterSettings.staticPeers());
    ClusterNode cluster =
        new ClusterNode(
            advertise.toString(),
            clusterSettings,
            store,
            limiter::apply,
            scheduler,
            clock,
            discovery);
    RateLimitService service = cluster.service();
    HealthStatusManager grpcHealth = new HealthStatusManager();
    Server grpc =
        NettyServerBuilder.forAddress(grpcAddress.toBindAddress())
            .addService(new V1Service(service))
            .addService(cluster.peersService())
            .addService(grpcHealth.getHealthService())
            .addService(ProtoReflectionServiceV1.newInstance())
            .build()
            .start();
    try {
      cluster.join(discovery);
    } catch (Exception e) {
      grpc.shutdownNow();
      scheduler.close();
      throw new IOException("cannot join the cluster: " + e.getMessage(), e);
    }
    HttpListener http;
    try {
      http = HttpListener.start(config.httpAddress().toBindAddress(), httpRoutes(service));
    } catch (IOException | RuntimeException e) {
      cluster.close();
      grpc.shutdownNow();
      scheduler.close();
      throw e;
    }
    WeirNode node = new WeirNode(cluster, scheduler, grpc, http, grpcHealth, advertise);
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

  /** Returns the node's cluster member. */
  public ClusterNode cluster() {
    return cluster;
  }

  /**
   * Stops the node: reports NOT_SERVING, leaves the cluster (with hand-off on, peers are told and
   * every bucket goes to its next owner while both listeners still answer), stops the HTTP listener
   * (up to 1 s for exchanges in flight), then the gRPC listener (up to 5 s for calls in flight).
   * Calling it again does nothing.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    healthRefresher.shutdownNow();
    grpcHealth.enterTerminalState();
    LOG.info("peer forwarding: {}", cluster.batchStats());
    cluster.leave(LEAVE_WAIT);
    LOG.info(
        "left the cluster: handed {} buckets to their next owners", cluster.handOff().sentCount());
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
    scheduler.close();
  }
}
