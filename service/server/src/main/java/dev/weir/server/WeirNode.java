package dev.weir.server;

import dev.weir.core.Weir;
import dev.weir.core.WeirMember;
import dev.weir.core.cluster.ClusterNode;
import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.discovery.DiscoveryFactory;
import dev.weir.core.discovery.DiscoverySettings;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.discovery.StaticDiscovery;
import dev.weir.core.http.HttpListener;
import dev.weir.core.http.HttpRoute;
import dev.weir.core.limiter.HealthStatus;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.store.BucketStore;
import dev.weir.core.store.CaffeineBucketStore;
import dev.weir.core.time.Clock;
import dev.weir.core.time.SystemClock;
import dev.weir.envoy.EnvoyAdapter;
import dev.weir.envoy.EnvoySettings;
import dev.weir.gubernator.V1Service;
import dev.weir.gubernator.http.GatewayRoutes;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
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
 * <p>The cluster member inside is started through {@link Weir#builder()}, the same entry point an
 * embedding service uses: the node adds its own services to the gRPC server builder it hands over.
 *
 * <p>A configured port of 0 takes a free port; read it back with {@link #grpcPort()} and {@link
 * #httpPort()}. An advertised address with port 0 advertises the gRPC port actually used.
 */
public final class WeirNode implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(WeirNode.class);
  private static final long HEALTH_REFRESH_MILLIS = 1000;
  private static final Duration HTTP_GRACE = Duration.ofSeconds(1);
  private static final Duration LEAVE_WAIT = Duration.ofSeconds(5);

  private final RateLimitService service;
  private final WeirMember member;
  private final ScheduledExecutorService discoveryScheduler;
  private final HttpListener http;
  private final HealthStatusManager grpcHealth;
  private final ScheduledExecutorService healthRefresher;
  private final HostPort advertiseAddress;
  private final EnvoyAdapter envoyAdapter;
  private final AtomicBoolean closed = new AtomicBoolean();

  private WeirNode(
      WeirMember member,
      ScheduledExecutorService discoveryScheduler,
      HttpListener http,
      HealthStatusManager grpcHealth,
      HostPort advertiseAddress,
      EnvoyAdapter envoyAdapter) {
    this.member = member;
    this.discoveryScheduler = discoveryScheduler;
    this.service = member.service();
    this.envoyAdapter = envoyAdapter;
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
    return withoutEnvoyConfig(() -> start(config, EnvoySettings.DEFAULTS));
  }

  /**
   * Starts a node on the system clock with a Caffeine store, serving Envoy's RateLimitService when
   * {@code envoy} names a descriptor config; an invalid descriptor config throws.
   */
  public static WeirNode start(WeirConfig config, EnvoySettings envoy)
      throws IOException, dev.weir.envoy.config.ConfigException {
    return start(config, ClusterSettings.defaults(), envoy);
  }

  /**
   * Starts a cluster member on the system clock with a Caffeine store: its peers come from {@code
   * cluster} (static discovery), and Envoy's RateLimitService is served when {@code envoy} names a
   * descriptor config.
   */
  public static WeirNode start(WeirConfig config, ClusterSettings cluster, EnvoySettings envoy)
      throws IOException, dev.weir.envoy.config.ConfigException {
    return start(config, cluster, DiscoverySettings.staticPeers(), envoy);
  }

  /**
   * Starts a cluster member on the system clock with a Caffeine store, finding its peers as {@code
   * discovery} says ({@code static} takes them from {@code cluster}).
   */
  public static WeirNode start(
      WeirConfig config, ClusterSettings cluster, DiscoverySettings discovery, EnvoySettings envoy)
      throws IOException, dev.weir.envoy.config.ConfigException {
    Clock clock = SystemClock.INSTANCE;
    return start(
        config,
        cluster,
        discovery,
        envoy,
        clock,
        new CaffeineBucketStore(clock, config.cacheSize()));
  }

  /** Starts a node deciding at {@code clock}'s time over {@code store}. */
  public static WeirNode start(WeirConfig config, Clock clock, BucketStore store)
      throws IOException {
    return withoutEnvoyConfig(() -> start(config, EnvoySettings.DEFAULTS, clock, store));
  }

  /** A start that cannot load a descriptor config. */
  private interface Start {
    WeirNode run() throws IOException, dev.weir.envoy.config.ConfigException;
  }

  private static WeirNode withoutEnvoyConfig(Start start) throws IOException {
    try {
      return start.run();
    } catch (dev.weir.envoy.config.ConfigException e) {
      throw new IllegalStateException("no descriptor config was given, yet one failed", e);
    }
  }

  /**
   * Starts a node deciding at {@code clock}'s time over {@code store}, with the Envoy adapter
   * ({@code ShouldRateLimit} on the gRPC port, {@code POST /json} on the HTTP port) when {@code
   * envoy.config()} is set; an invalid descriptor config throws before any port is bound.
   */
  public static WeirNode start(
      WeirConfig config, EnvoySettings envoy, Clock clock, BucketStore store)
      throws IOException, dev.weir.envoy.config.ConfigException {
    return start(
        config, ClusterSettings.defaults(), DiscoverySettings.staticPeers(), envoy, clock, store);
  }

  /**
   * Starts a cluster member deciding at {@code clock}'s time over {@code store}: it serves {@code
   * PeersV1} next to {@code V1} on the gRPC port, joins the peers {@code discoverySettings} finds
   * (static: those of {@code clusterSettings}), then opens the HTTP listener; the Envoy adapter is
   * added as for {@link #start(WeirConfig, EnvoySettings, Clock, BucketStore)}.
   */
  public static WeirNode start(
      WeirConfig config,
      ClusterSettings clusterSettings,
      DiscoverySettings discoverySettings,
      EnvoySettings envoy,
      Clock clock,
      BucketStore store)
      throws IOException, dev.weir.envoy.config.ConfigException {
    HostPort grpcAddress = config.grpcAddress();
    if (grpcAddress.port() == 0) {
      grpcAddress = grpcAddress.withPort(freePort(grpcAddress.toBindAddress()));
    }
    HostPort advertise = config.advertiseAddress();
    if (advertise.port() == 0) {
      advertise = advertise.withPort(grpcAddress.port());
    }
    ScheduledExecutorService discoveryScheduler =
        Executors.newSingleThreadScheduledExecutor(
            runnable -> {
              Thread thread = new Thread(runnable, "weir-discovery");
              thread.setDaemon(true);
              return thread;
            });
    String self = discoverySettings.advertiseAddress(advertise.toString());
    PeerDiscovery discovery;
    try {
      discovery =
          new DiscoveryFactory(
                  address -> new StaticDiscovery(address, clusterSettings.staticPeers()),
                  discoveryScheduler)
              .create(discoverySettings, advertise.toString());
    } catch (Exception e) {
      discoveryScheduler.shutdownNow();
      throw new IOException("cannot start peer discovery: " + e.getMessage(), e);
    }
    HealthStatusManager grpcHealth = new HealthStatusManager();
    NettyServerBuilder grpcBuilder =
        NettyServerBuilder.forAddress(grpcAddress.toBindAddress())
            .addService(grpcHealth.getHealthService())
            .addService(ProtoReflectionServiceV1.newInstance());
    WeirMember member =
        Weir.builder()
            .advertiseAddress(self)
            .discovery(discovery)
            .clusterSettings(clusterSettings)
            .store(store)
            .clock(clock)
            .leaveWait(LEAVE_WAIT)
            .serverBuilder(grpcBuilder)
            .build();
    RateLimitService service = member.service();
    EnvoyAdapter envoyAdapter = null;
    try {
      if (envoy.config().isPresent()) {
        envoyAdapter =
            EnvoyAdapter.start(
                envoy.config().get(), envoy, service, clock, new SimpleMeterRegistry());
      }
    } catch (dev.weir.envoy.config.ConfigException | RuntimeException e) {
      member.close();
      discoveryScheduler.shutdownNow();
      throw e;
    }
    grpcBuilder.addService(new V1Service(service));
    List<HttpRoute> routes = httpRoutes(service);
    if (envoyAdapter != null) {
      grpcBuilder.addService(envoyAdapter.grpcService());
      routes.addAll(envoyAdapter.httpRoutes());
    }
    HttpListener http;
    try {
      member.start();
      http = HttpListener.start(config.httpAddress().toBindAddress(), routes);
    } catch (IOException | RuntimeException e) {
      member.close();
      discoveryScheduler.shutdownNow();
      if (envoyAdapter != null) {
        envoyAdapter.close();
      }
      throw e;
    }
    WeirNode node =
        new WeirNode(member, discoveryScheduler, http, grpcHealth, advertise, envoyAdapter);
    if (envoyAdapter != null) {
      envoyAdapter.watch(node.healthRefresher);
    }
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
    return member.grpcPort();
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
    member.awaitTermination();
  }

  /** Returns the node's cluster member. */
  public ClusterNode cluster() {
    return member.cluster();
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
    if (envoyAdapter != null) {
      envoyAdapter.close();
    }
    grpcHealth.enterTerminalState();
    LOG.info("peer forwarding: {}", member.cluster().batchStats());
    member.leave();
    http.stop(HTTP_GRACE);
    member.close();
    discoveryScheduler.shutdownNow();
  }
}
