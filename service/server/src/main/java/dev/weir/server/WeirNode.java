package dev.weir.server;

import dev.weir.core.Weir;
import dev.weir.core.WeirMember;
import dev.weir.core.cluster.ClusterNode;
import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.peer.PeerListener;
import dev.weir.core.cluster.peer.auth.PeerSettings;
import dev.weir.core.config.EnvVar;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.discovery.StaticDiscovery;
import dev.weir.core.grpc.MalformedRequests;
import dev.weir.core.health.ConfigComponent;
import dev.weir.core.health.DrainingComponent;
import dev.weir.core.health.HealthChecker;
import dev.weir.core.health.NodeHealth;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.metrics.GrpcServerMetrics;
import dev.weir.core.store.BucketStore;
import dev.weir.core.store.CacheStatistics;
import dev.weir.core.store.ClockBucketStore;
import dev.weir.core.time.Clock;
import dev.weir.core.time.SystemClock;
import dev.weir.envoy.EnvoyAdapter;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.rlqs.RlqsService;
import dev.weir.envoy.rlqs.RlqsSettings;
import dev.weir.gubernator.NativeCheck;
import dev.weir.gubernator.V1Service;
import dev.weir.gubernator.http.GatewayRoutes;
import dev.weir.http.HttpListener;
import dev.weir.http.HttpRoute;
import dev.weir.http.HttpSettings;
import dev.weir.metrics.micrometer.JvmMetrics;
import dev.weir.metrics.micrometer.MicrometerMetrics;
import dev.weir.proto.gubernator.V1Grpc;
import dev.weir.tls.TlsIdentity;
import dev.weir.tls.TlsReload;
import dev.weir.tls.TlsSettings;
import io.grpc.BindableService;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running Weir node: the rate-limit service, its gRPC listener ({@code pb.gubernator.V1},
 * {@code grpc.health.v1}, server reflection {@code v1} and {@code v1alpha}; a request that cannot
 * be parsed is answered {@code INVALID_ARGUMENT} by {@link MalformedRequests}), its peer listener
 * ({@code pb.gubernator.PeersV1}, only when it may have peers), its HTTP listener (the JSON
 * gateway, {@code GET /readyz}, {@code GET /metrics}, {@code GET /version}) and, when {@code
 * WEIR_STATUS_HTTP_ADDRESS} is set, its {@link StatusListener}. Without {@code WEIR_ENVOY_CONFIG},
 * Envoy's calls are answered by {@link EnvoyAdapterOff}. Build and start it with {@link #builder};
 * {@link #close} stops the listeners gracefully.
 *
 * <p>A configured port of 0 takes a free port; read it back with {@link #grpcPort()} and {@link
 * #httpPort()}. An advertised address with port 0 advertises the gRPC port actually used.
 */
public final class WeirNode implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(WeirNode.class);
  private static final long HEALTH_REFRESH_MILLIS = 1000;
  private static final Duration LEAVE_WAIT = Duration.ofSeconds(5);

  /** The most the status listener waits for its requests in flight when stopping. */
  static final long STATUS_GRACE_MILLIS = 1000;

  private static final Duration STATUS_GRACE = Duration.ofMillis(STATUS_GRACE_MILLIS);

  private final RateLimitService service;
  private final WeirMember member;
  private final ScheduledExecutorService discoveryScheduler;
  private final HttpListener http;
  private final StatusListener status;
  private final HealthStatusManager grpcHealth;
  private final ScheduledExecutorService healthRefresher;
  private final HostPort advertiseAddress;
  private final EnvoyAdapter envoyAdapter;
  private final RlqsService rlqs;
  private final HealthChecker health;
  private final DrainingComponent draining;
  private final OpsSettings ops;
  private final PrometheusMeterRegistry registry;
  private final JvmMetrics jvmMetrics;
  private final TlsIdentity tls;
  private final TlsIdentity clientTls;
  private final List<String> healthServiceNames;
  private final RateLimitedLogger tlsWarnings =
      new RateLimitedLogger(LOG, SystemClock.INSTANCE, Duration.ofMinutes(1));
  private final AtomicBoolean closed = new AtomicBoolean();

  private WeirNode(
      WeirMember member,
      ScheduledExecutorService discoveryScheduler,
      HttpListener http,
      StatusListener status,
      HealthStatusManager grpcHealth,
      HostPort advertiseAddress,
      EnvoyAdapter envoyAdapter,
      RlqsService rlqs,
      RateLimitService service,
      HealthChecker health,
      DrainingComponent draining,
      OpsSettings ops,
      PrometheusMeterRegistry registry,
      TlsIdentity tls,
      TlsIdentity clientTls,
      List<String> healthServiceNames) {
    this.member = member;
    this.clientTls = clientTls;
    this.healthServiceNames = healthServiceNames;
    this.discoveryScheduler = discoveryScheduler;
    this.service = service;
    this.health = health;
    this.draining = draining;
    this.ops = ops;
    this.registry = registry;
    this.jvmMetrics = new JvmMetrics(registry);
    this.tls = tls;
    this.envoyAdapter = envoyAdapter;
    this.rlqs = rlqs;
    this.http = http;
    this.status = status;
    this.grpcHealth = grpcHealth;
    this.advertiseAddress = advertiseAddress;
    this.healthRefresher = daemonScheduler("weir-health");
  }

  /** Returns a builder of a node with {@code config}'s addresses and cache size. */
  public static Builder builder(WeirConfig config) {
    return new Builder(config);
  }

  /**
   * A builder of a {@link WeirNode}: what is not set takes its default (a single node found by
   * static discovery, no Envoy descriptor config, default input limits and no TLS, the system
   * clock, a Caffeine store of {@code config.cacheSize()} buckets).
   */
  public static final class Builder {
    private final WeirConfig config;
    private ClusterSettings cluster = ClusterSettings.defaults();
    private DiscoverySettings discovery = DiscoverySettings.staticPeers();
    private EnvoySettings envoy = EnvoySettings.DEFAULTS;
    private RlqsSettings rlqs = RlqsSettings.DEFAULTS;
    private OpsSettings ops = OpsSettings.DEFAULTS;
    private PeerSettings peers;
    private Clock clock = SystemClock.INSTANCE;
    private BucketStore store;
    private TlsSettings clientTls = TlsSettings.DISABLED;
    private boolean readyNeedsDomain = true;
    private EnvoyMetrics.Observer envoyObserver = EnvoyMetrics.Observer.NONE;
    private Function<HealthChecker, List<HttpRoute>> extraRoutes = health -> List.of();
    private Duration maxConnectionAge;
    private Duration maxConnectionAgeGrace;
    private List<String> healthServiceNames = List.of();
    private EnvVar grpcAddressVariable = WeirConfig.GRPC_ADDRESS;
    private EnvVar httpAddressVariable = WeirConfig.HTTP_ADDRESS;
    private boolean writeAutoCa;
    private Path autoCaFile;

    private Builder(WeirConfig config) {
      this.config = Objects.requireNonNull(config, "config");
      this.peers = PeerSettings.defaults(config.grpcAddress());
    }

    /**
     * Sets the peer listener's address and authentication (default: the gRPC host at port 1052, no
     * secret, which a node with peers and without TLS refuses).
     */
    public Builder peers(PeerSettings value) {
      this.peers = Objects.requireNonNull(value, "peers");
      return this;
    }

    /** Sets the ring, batching, GLOBAL and hand-off settings, and the static peers. */
    public Builder cluster(ClusterSettings value) {
      this.cluster = Objects.requireNonNull(value, "cluster");
      return this;
    }

    /** Sets how peers are found ({@code static} takes them from {@link #cluster}). */
    public Builder discovery(DiscoverySettings value) {
      this.discovery = Objects.requireNonNull(value, "discovery");
      return this;
    }

    /**
     * Sets the Envoy adapter's settings: when they name a descriptor config, {@code
     * ShouldRateLimit} and {@code StreamRateLimitQuotas} (RLQS) are served on the gRPC port and
     * {@code POST /json} on the HTTP port.
     */
    public Builder envoy(EnvoySettings value) {
      this.envoy = Objects.requireNonNull(value, "envoy");
      return this;
    }

    /**
     * Sets the settings of Envoy's rate-limit quota service, served on the gRPC port whenever the
     * Envoy adapter is on.
     */
    public Builder rlqs(RlqsSettings value) {
      this.rlqs = Objects.requireNonNull(value, "rlqs");
      return this;
    }

    /** Sets the input limits, TLS, HTTP capacity, status listener and shutdown timing. */
    Builder ops(OpsSettings value) {
      this.ops = Objects.requireNonNull(value, "ops");
      return this;
    }

    /**
     * Has a node with {@code WEIR_TLS_AUTO} write its generated CA to {@code file}, or when it is
     * empty to {@link AutoCaFile#byDefault} of its gRPC port, before any listener opens (default:
     * not written).
     */
    Builder writeAutoCa(Optional<Path> file) {
      this.writeAutoCa = true;
      this.autoCaFile = file.orElse(null);
      return this;
    }

    /** Sets the clock decisions are made at. */
    public Builder clock(Clock value) {
      this.clock = Objects.requireNonNull(value, "clock");
      return this;
    }

    /** Sets the bucket store (default: a Caffeine store of {@code config.cacheSize()} buckets). */
    public Builder store(BucketStore value) {
      this.store = Objects.requireNonNull(value, "store");
      return this;
    }

    /**
     * Sets TLS for the client-facing gRPC listener alone, replacing the node's TLS there (default
     * off: the node's TLS, if any); the HTTP and peer listeners keep the node's.
     */
    Builder clientTls(TlsSettings value) {
      this.clientTls = Objects.requireNonNull(value, "clientTls");
      return this;
    }

    /**
     * Sets whether the node reports not ready while the Envoy adapter has no domain loaded (default
     * true; envoyproxy/ratelimit only does so with {@code
     * HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED}).
     */
    Builder readyNeedsDomain(boolean value) {
      this.readyNeedsDomain = value;
      return this;
    }

    /** Sets who is told of each Envoy rule's counters, see {@link EnvoyMetrics.Observer}. */
    Builder envoyObserver(EnvoyMetrics.Observer value) {
      this.envoyObserver = Objects.requireNonNull(value, "envoyObserver");
      return this;
    }

    /** Adds the routes {@code value} makes from the node's health to the HTTP listener. */
    Builder extraHttpRoutes(Function<HealthChecker, List<HttpRoute>> value) {
      this.extraRoutes = Objects.requireNonNull(value, "extraHttpRoutes");
      return this;
    }

    /**
     * Closes client gRPC connections after {@code age}, with {@code grace} for their calls to
     * finish (default: never), so clients re-resolve and spread over new nodes.
     */
    Builder grpcMaxConnectionAge(Duration age, Duration grace) {
      this.maxConnectionAge = Objects.requireNonNull(age, "age");
      this.maxConnectionAgeGrace = Objects.requireNonNull(grace, "grace");
      return this;
    }

    /** Adds {@code grpc.health.v1} service names that report the node's health. */
    Builder healthServiceNames(List<String> value) {
      this.healthServiceNames = List.copyOf(value);
      return this;
    }

    /** Sets the variables named when the gRPC or HTTP listener cannot bind its address. */
    Builder addressVariables(EnvVar grpc, EnvVar http) {
      this.grpcAddressVariable = Objects.requireNonNull(grpc, "grpc");
      this.httpAddressVariable = Objects.requireNonNull(http, "http");
      return this;
    }

    /**
     * Starts the node: it serves {@code V1} on the gRPC port and {@code PeersV1} on the peer
     * listener (when it may have peers), joins the peers discovery finds, then opens the HTTP
     * listener (and the status listener when configured). Every front door is counted in the node's
     * Prometheus registry, served at {@code GET /metrics}. Client gRPC calls run on the transport's
     * event loops ({@code directExecutor}): a decision answered on this node never changes threads,
     * and nothing a client-facing gRPC handler runs may block (forwarded items complete on the peer
     * clients' threads; the peer listener has its own pool).
     *
     * @throws dev.weir.envoy.config.DescriptorConfigException if the descriptor config is invalid (before any
     *     port is bound)
     */
    public WeirNode start() throws IOException, dev.weir.envoy.config.DescriptorConfigException {
      return WeirNode.start(
          this, store != null ? store : new ClockBucketStore(clock, config.cacheSize()));
    }
  }

  private static WeirNode start(Builder builder, BucketStore store)
      throws IOException, dev.weir.envoy.config.DescriptorConfigException {
    WeirConfig config = builder.config;
    ClusterSettings clusterSettings = builder.cluster;
    DiscoverySettings discoverySettings = builder.discovery;
    EnvoySettings envoy = builder.envoy;
    RlqsSettings rlqsSettings = builder.rlqs;
    OpsSettings ops = builder.ops;
    Clock clock = builder.clock;
    HostPort grpcAddress = config.grpcAddress();
    if (grpcAddress.port() == 0) {
      grpcAddress = grpcAddress.withPort(freePort(grpcAddress.toBindAddress()));
    }
    HostPort advertise = config.advertiseAddress();
    if (advertise.port() == 0) {
      advertise = advertise.withPort(grpcAddress.port());
    }
    TlsIdentity tls = loadTls(ops.tls(), advertise);
    if (tls != null && builder.writeAutoCa) {
      Path file =
          builder.autoCaFile != null
              ? builder.autoCaFile
              : AutoCaFile.byDefault(grpcAddress.port());
      writeAutoCa(tls, file, advertise);
    }
    TlsIdentity clientTls = loadTls(builder.clientTls, advertise);
    PeerSettings peers = builder.peers;
    HostPort peerAddress = peers.address();
    if (peerAddress.port() == 0) {
      peerAddress = peerAddress.withPort(freePort(peerAddress.toBindAddress()));
    }
    PrometheusMeterRegistry registry = PrometheusEndpoint.newRegistry();
    BuildInfo.register(registry);
    MicrometerMetrics metrics = new MicrometerMetrics(registry);
    if (store instanceof CacheStatistics cache) {
      metrics.watchCache(cache);
    }
    ScheduledExecutorService discoveryScheduler = daemonScheduler("weir-discovery");
    String self = discoverySettings.advertiseAddress(advertise.toString());
    PeerDiscovery discovery;
    try {
      discovery =
          new DiscoveryFactory(
                  address -> new StaticDiscovery(address, clusterSettings.staticPeers()),
                  discoveryScheduler,
                  metrics)
              .create(discoverySettings, advertise.toString(), peerAddress.port());
    } catch (Exception e) {
      discoveryScheduler.shutdownNow();
      throw new IOException("cannot start peer discovery: " + e.getMessage(), e);
    }
    HealthStatusManager grpcHealth = notServingHealth();
    NettyServerBuilder grpcBuilder =
        NettyServerBuilder.forAddress(grpcAddress.toBindAddress())
            .directExecutor()
            .maxInboundMessageSize(ops.limits().maxGrpcMessageBytes())
            .addStreamTracerFactory(new GrpcServerMetrics(metrics, clock))
            .addService(MalformedRequests.guard(grpcHealth.getHealthService()))
            .addService(MalformedRequests.guard(ProtoReflectionServiceV1.newInstance()))
            .addService(MalformedRequests.guard(reflectionV1Alpha()));
    if (clientTls != null) {
      grpcBuilder.sslContext(clientTls.grpcServerContext());
    } else if (tls != null) {
      grpcBuilder.sslContext(tls.grpcServerContext());
    }
    if (builder.maxConnectionAge != null) {
      grpcBuilder
          .maxConnectionAge(builder.maxConnectionAge.toNanos(), TimeUnit.NANOSECONDS)
          .maxConnectionAgeGrace(builder.maxConnectionAgeGrace.toNanos(), TimeUnit.NANOSECONDS);
    }
    Weir.Builder memberBuilder =
        Weir.builder()
            .advertiseAddress(self)
            .discovery(discovery)
            .clusterSettings(clusterSettings)
            .store(store)
            .clock(clock)
            .leaveWait(LEAVE_WAIT)
            .serverBuilder(grpcBuilder)
            .peerAddress(peerAddress.toString())
            .insecurePeers(peers.insecure())
            .metrics(metrics)
            .inputLimits(ops.limits());
    peers.secret().ifPresent(memberBuilder::peerSecret);
    if (tls != null) {
      memberBuilder.peerTls(tls);
      peers.allowedIdentities().ifPresent(memberBuilder::peerAllowedIdentities);
    }
    WeirMember member;
    try {
      member = memberBuilder.build();
    } catch (RuntimeException e) {
      discoveryScheduler.shutdownNow();
      closeQuietly(discovery);
      throw e;
    }
    ClusterMetrics.watch(member.cluster(), metrics);
    HealthChecker health = member.cluster().health();
    DrainingComponent draining = new DrainingComponent();
    health.add(draining);
    NodeHealth nodeHealth = member.cluster().nodeHealth();
    CheckMeter meter = new CheckMeter(metrics);
    RateLimitService service = member.service();
    NativeCheck nativeCheck = new NativeCheck(service, ops.limits(), meter);
    EnvoyAdapter envoyAdapter = null;
    try {
      if (envoy.enabled()) {
        envoyAdapter =
            EnvoyAdapter.start(
                envoy,
                service,
                clock,
                new EnvoyMetrics(registry, builder.envoyObserver),
                ops.limits(),
                meter);
      }
    } catch (dev.weir.envoy.config.DescriptorConfigException | IOException | RuntimeException e) {
      member.close();
      discoveryScheduler.shutdownNow();
      throw e;
    }
    if (envoyAdapter != null && builder.readyNeedsDomain) {
      health.add(new ConfigComponent(envoyAdapter::hasDomains));
    }
    grpcBuilder.addService(MalformedRequests.guard(new V1Service(nativeCheck, nodeHealth)));
    List<HttpRoute> routes = httpRoutes(nativeCheck, nodeHealth);
    routes.add(ReadinessRoute.of(health));
    routes.add(new PrometheusEndpoint(registry).route());
    routes.add(BuildInfo.route());
    routes.addAll(builder.extraRoutes.apply(health));
    RlqsService rlqs = null;
    if (envoyAdapter != null) {
      grpcBuilder.addService(MalformedRequests.guard(envoyAdapter.grpcService()));
      routes.addAll(envoyAdapter.httpRoutes());
      ClusterNode cluster = member.cluster();
      rlqs =
          envoyAdapter.rlqs(
              cluster.quota()::report, cluster.self(), rlqsSettings, ops.limits(), clock, registry);
      cluster.quota().receiveWith(rlqs);
      grpcBuilder.addService(MalformedRequests.guard(rlqs));
    } else {
      grpcBuilder.fallbackHandlerRegistry(EnvoyAdapterOff.grpcFallback());
      routes.add(EnvoyAdapterOff.jsonRoute());
    }
    HttpListener http = null;
    StatusListener status = null;
    try {
      try {
        member.start();
      } catch (IOException e) {
        throw bindFailure(e, config, peerAddress, builder.grpcAddressVariable);
      }
      try {
        http = startHttp(config.httpAddress(), routes, tls, ops.http(), metrics, clock);
      } catch (BindException e) {
        throw BindFailure.of("HTTP", builder.httpAddressVariable, config.httpAddress(), e);
      }
      if (ops.statusAddress().isPresent()) {
        try {
          status =
              StatusListener.start(
                  ops.statusAddress().get(), nodeHealth, health, registry, tls, ops.http());
        } catch (BindException e) {
          throw BindFailure.of(
              "status", OpsSettings.STATUS_HTTP_ADDRESS, ops.statusAddress().get(), e);
        }
      }
    } catch (IOException | GeneralSecurityException | RuntimeException e) {
      if (http != null) {
        http.stop(Duration.ZERO);
      }
      member.close();
      discoveryScheduler.shutdownNow();
      if (envoyAdapter != null) {
        envoyAdapter.close();
      }
      if (e instanceof GeneralSecurityException) {
        throw new IOException("TLS context cannot be built: " + e.getMessage(), e);
      }
      if (e instanceof IOException io) {
        throw io;
      }
      throw (RuntimeException) e;
    }
    WeirNode node =
        new WeirNode(
            member,
            discoveryScheduler,
            http,
            status,
            grpcHealth,
            advertise,
            envoyAdapter,
            rlqs,
            service,
            health,
            draining,
            ops,
            registry,
            tls,
            clientTls,
            builder.healthServiceNames);
    if (envoyAdapter != null) {
      envoyAdapter.watch(node.healthRefresher);
    }
    if (tls != null || clientTls != null) {
      long every = (tls != null ? ops.tls() : builder.clientTls).reloadInterval().toMillis();
      node.healthRefresher.scheduleWithFixedDelay(
          node::reloadTlsQuietly, every, every, TimeUnit.MILLISECONDS);
    }
    node.refreshHealth();
    node.healthRefresher.scheduleWithFixedDelay(
        node::refreshHealthQuietly,
        HEALTH_REFRESH_MILLIS,
        HEALTH_REFRESH_MILLIS,
        TimeUnit.MILLISECONDS);
    return node;
  }

  /** Names the listener whose address was taken, when {@code e} is a bind failure. */
  private static IOException bindFailure(
      IOException e, WeirConfig config, HostPort peerAddress, EnvVar grpcVariable) {
    if (!BindFailure.isBindFailure(e)) {
      return e;
    }
    return e instanceof PeerListener.StartFailure
        ? BindFailure.of("peer", PeerSettings.ADDRESS, peerAddress, e)
        : BindFailure.of("gRPC", grpcVariable, config.grpcAddress(), e);
  }

  private static void closeQuietly(AutoCloseable resource) {
    try {
      resource.close();
    } catch (Exception e) {
      LOG.warn("could not close {}: {}", resource, e.toString());
    }
  }

  /**
   * Starts the HTTP listener at {@code address} serving {@code routes}, over HTTPS with {@code
   * tls}'s identity and client-auth mode when it is not null, recording to {@code metrics}.
   */
  private static HttpListener startHttp(
      HostPort address,
      List<HttpRoute> routes,
      TlsIdentity tls,
      HttpSettings settings,
      MicrometerMetrics metrics,
      Clock clock)
      throws IOException, GeneralSecurityException {
    HttpListener.Builder listener =
        HttpListener.builder(address.toBindAddress())
            .routes(routes)
            .settings(settings)
            .metrics(metrics, clock);
    if (tls != null) {
      listener.tls(tls.httpsEngines());
    }
    return listener.start();
  }

  /**
   * Writes the CA {@code tls} generated, if it generated one, to {@code file} and logs where it is
   * and how clients trust it; a file that cannot be written is a warning (the node still serves).
   */
  private static void writeAutoCa(TlsIdentity tls, Path file, HostPort advertise) {
    if (tls.generatedCa().isEmpty()) {
      return;
    }
    try {
      AutoCaFile.write(file, tls.generatedCa().get());
      LOG.info(
          "WEIR_TLS_AUTO: the CA generated for this node is in {}; clients trust it with, e.g.,"
              + " grpcurl -cacert {} {} list",
          file,
          file,
          advertise);
    } catch (IOException | RuntimeException e) {
      LOG.warn(
          "WEIR_TLS_AUTO: cannot write the generated CA to {} ({}); clients cannot verify this"
              + " node: set {} to a writable file",
          file,
          e.toString(),
          AutoCaFile.FILE.name());
    }
  }

  /** Returns the TLS identity of {@code settings}, or null when they turn TLS off. */
  private static TlsIdentity loadTls(TlsSettings settings, HostPort advertise) throws IOException {
    if (!settings.enabled()) {
      return null;
    }
    try {
      return TlsIdentity.load(settings, List.of(advertise.host(), "localhost", "127.0.0.1"));
    } catch (GeneralSecurityException e) {
      throw new IOException("TLS identity cannot be used: " + e.getMessage(), e);
    }
  }

  private static ScheduledExecutorService daemonScheduler(String threadName) {
    return Executors.newSingleThreadScheduledExecutor(
        runnable -> {
          Thread thread = new Thread(runnable, threadName);
          thread.setDaemon(true);
          return thread;
        });
  }

  /**
   * Returns server reflection as {@code grpc.reflection.v1alpha}, which older grpcurl, Postman and
   * grpc-js reflection clients ask for; grpc-java keeps it deprecated in favour of {@code v1}.
   */
  @SuppressWarnings("deprecation")
  private static BindableService reflectionV1Alpha() {
    return io.grpc.protobuf.services.ProtoReflectionService.newInstance();
  }

  private static List<HttpRoute> httpRoutes(NativeCheck check, NodeHealth health) {
    return new ArrayList<>(new GatewayRoutes(check, health).routes());
  }

  private static int freePort(InetSocketAddress address) throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, address.getAddress())) {
      return socket.getLocalPort();
    }
  }

  /**
   * Returns a {@code grpc.health.v1} service that reports NOT_SERVING for the node and for {@code
   * pb.gubernator.V1} until {@link #refreshHealth()} first runs (gRPC's own default is SERVING),
   * so that no probe passes while the node is still joining.
   */
  static HealthStatusManager notServingHealth() {
    HealthStatusManager health = new HealthStatusManager();
    health.setStatus(HealthStatusManager.SERVICE_NAME_ALL_SERVICES, ServingStatus.NOT_SERVING);
    health.setStatus(V1Grpc.SERVICE_NAME, ServingStatus.NOT_SERVING);
    return health;
  }

  /**
   * Sets the {@code grpc.health.v1} status of the node and of {@code pb.gubernator.V1} from
   * readiness: a peer's trouble does not make it {@code NOT_SERVING}.
   */
  void refreshHealth() {
    ServingStatus status = health.ready() ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
    grpcHealth.setStatus(HealthStatusManager.SERVICE_NAME_ALL_SERVICES, status);
    grpcHealth.setStatus(V1Grpc.SERVICE_NAME, status);
    for (String name : healthServiceNames) {
      grpcHealth.setStatus(name, status);
    }
  }

  private void refreshHealthQuietly() {
    try {
      refreshHealth();
    } catch (RuntimeException e) {
      LOG.warn("health refresh failed", e);
    }
  }

  /**
   * Re-reads the TLS certificate, key and CA files if they changed and logs the outcome: what was
   * taken up at INFO, each file that could not be used (and keeps its previous contents) at WARN.
   */
  void reloadTls() {
    if (tls != null) {
      reloadTls(tls);
    }
    if (clientTls != null) {
      reloadTls(clientTls);
    }
  }

  private void reloadTls(TlsIdentity identity) {
    TlsReload reload = identity.reload();
    if (reload.certificateReloaded()) {
      LOG.info("TLS certificate reloaded: {}", identity.chain()[0].getSubjectX500Principal());
    }
    if (reload.casReloaded()) {
      LOG.info(
          "TLS CA file reloaded: {} trusted CA certificate(s)", identity.trustedCas().length);
    }
    if (!reload.failures().isEmpty()) {
      tlsWarnings.warn(
          "tls-reload",
          "TLS files not reloaded, their previous contents stay in use: {}",
          String.join("; ", reload.failures()));
    }
  }

  private void reloadTlsQuietly() {
    try {
      reloadTls();
    } catch (RuntimeException e) {
      tlsWarnings.warn("tls-reload", "TLS reload failed: {}", e.toString());
    }
  }

  /**
   * Returns the node's TLS identity when TLS is on; peers are called with the same certificate.
   */
  public Optional<TlsIdentity> tlsIdentity() {
    return Optional.ofNullable(tls);
  }

  /** Returns the node's Prometheus registry, for components that add meters. */
  PrometheusMeterRegistry registry() {
    return registry;
  }

  /** Returns the Envoy adapter, empty when it is off. */
  Optional<EnvoyAdapter> envoyAdapter() {
    return Optional.ofNullable(envoyAdapter);
  }

  /** Returns the port the gRPC listener is bound to. */
  public int grpcPort() {
    return member.grpcPort();
  }

  /** Returns the port the peer listener is bound to, empty when the node has no peers. */
  public OptionalInt peerPort() {
    return member.peerPort();
  }

  /** Returns the port the HTTP listener is bound to. */
  public int httpPort() {
    return http.port();
  }

  /** Returns the port the status listener is bound to, empty when it is off. */
  public OptionalInt statusPort() {
    return status == null ? OptionalInt.empty() : OptionalInt.of(status.port());
  }

  /**
   * Returns the domains of the loaded Envoy descriptor config, sorted; empty when the Envoy adapter
   * is off ({@code WEIR_ENVOY_CONFIG} unset).
   */
  public Optional<List<String>> envoyDomains() {
    return envoyAdapter == null ? Optional.empty() : Optional.of(envoyAdapter.domains());
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
   * Returns the node's health components (discovery, peers, draining and, serving Envoy, config);
   * readiness is {@link HealthChecker#ready()}.
   */
  public HealthChecker health() {
    return health;
  }

  /**
   * Stops the node. Readiness fails first: gRPC health reports NOT_SERVING, {@code GET /readyz}
   * answers 503 and {@code HealthCheck} (on the HTTP and status listeners) answers unhealthy
   * ("shutting down") while calls are still answered for {@code WEIR_GRACEFUL_TERMINATION_DELAY};
   * RLQS streams are ended at once with {@code UNAVAILABLE} (their proxies keep their assignments
   * and reconnect to another node at their next report) and new ones are refused. Then the node
   * leaves the cluster (with hand-off on, every bucket goes to its next owner while the listeners
   * still answer), and all listeners stop taking new calls at once and wait, side by side, up to
   * {@code WEIR_DRAIN_TIMEOUT} for the calls in flight (the status listener, which answers only
   * probes, at most {@value #STATUS_GRACE_MILLIS} ms), after which the rest are cancelled; the peer
   * clients, the cluster's timers and discovery stop only then, so the calls that drain are
   * answered (forwarded to the next owners). So it takes at
   * most the delay + the hand-off + the drain timeout + the time to close the sockets. An interrupt
   * cuts every wait short. Calling it again does nothing.
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
    draining.start();
    grpcHealth.enterTerminalState();
    if (rlqs != null) {
      rlqs.drain();
    }
    try {
      if (!ops.gracefulTerminationDelay().isZero()) {
        LOG.info("not ready; serving for {} before stopping", ops.gracefulTerminationDelay());
        Thread.sleep(ops.gracefulTerminationDelay().toMillis());
      }
      String forwarding = member.cluster().batchStats();
      if (!forwarding.isEmpty()) {
        LOG.info("peer forwarding: {}", forwarding);
      }
      member.leave();
      stopListeners(ops.drainTimeout());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      stopListeners(Duration.ZERO);
    } finally {
      discoveryScheduler.shutdownNow();
      jvmMetrics.close();
    }
  }

  /**
   * Stops the HTTP listener, the status listener and the gRPC listener in parallel, each waiting
   * up to {@code grace} (the status listener at most {@value #STATUS_GRACE_MILLIS} ms) for its
   * calls in flight, and only then closes the member: an HTTP call still draining needs the
   * member's timers (GLOBAL checks schedule their broadcasts on them).
   */
  private void stopListeners(Duration grace) {
    Thread httpStopper = stopper("weir-stop-http", () -> http.stop(grace));
    Thread statusStopper =
        status == null
            ? null
            : stopper("weir-stop-status", () -> status.stop(min(grace, STATUS_GRACE)));
    try {
      member.stopServer(grace);
    } finally {
      joinPromptly(httpStopper);
      if (statusStopper != null) {
        joinPromptly(statusStopper);
      }
      member.close(Duration.ZERO);
    }
  }

  private static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }

  /**
   * Starts a daemon thread named {@code name} that runs {@code stop}, logging a failure as a
   * warning naming {@code name}.
   */
  static Thread stopper(String name, Runnable stop) {
    Runnable logged =
        () -> {
          try {
            stop.run();
          } catch (RuntimeException e) {
            LOG.warn("stopping {} failed", name, e);
          }
        };
    Thread thread = new Thread(logged, name);
    thread.setDaemon(true);
    thread.start();
    return thread;
  }

  /**
   * Waits for {@code thread} to end; while the current thread is interrupted, it interrupts {@code
   * thread} so that its wait is cut short too, and keeps the interrupt status.
   */
  private static void joinPromptly(Thread thread) {
    boolean interrupted = Thread.interrupted();
    if (interrupted) {
      thread.interrupt();
    }
    while (true) {
      try {
        thread.join();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
        thread.interrupt();
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
