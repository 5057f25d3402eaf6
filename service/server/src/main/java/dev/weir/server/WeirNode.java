package dev.weir.server;

import dev.weir.core.WeirMember;
import dev.weir.core.cluster.ClusterNode;
import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.peer.auth.PeerSettings;
import dev.weir.core.config.EnvVar;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.health.ConfigComponent;
import dev.weir.core.health.DrainingComponent;
import dev.weir.core.health.HealthChecker;
import dev.weir.http.HttpListener;
import dev.weir.core.toplimited.OverLimitRecorder;
import dev.weir.core.toplimited.TopLimited;
import dev.weir.core.toplimited.TopLimitedWindow;
import dev.weir.http.HttpRoute;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.metrics.micrometer.JvmMetrics;
import dev.weir.metrics.micrometer.MicrometerMetrics;
import dev.weir.core.store.BucketStore;
import dev.weir.core.store.CacheStatistics;
import dev.weir.core.store.ClockBucketStore;
import dev.weir.core.time.Clock;
import dev.weir.core.time.SystemClock;
import dev.weir.tls.TlsIdentity;
import dev.weir.tls.TlsSettings;
import dev.weir.envoy.EnvoyAdapter;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.rlqs.RlqsSettings;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running Weir node: the rate-limit service, its gRPC listener ({@link ClientGrpcListener}),
 * its peer listener ({@code pb.gubernator.PeersV1}, only when it may have peers), its HTTP listener
 * (the JSON gateway, {@code GET /readyz}, {@code GET /metrics}, {@code GET /version}) and, when
 * {@code WEIR_STATUS_HTTP_ADDRESS} is set, its {@link StatusListener}. Build and start it with
 * {@link #builder}; {@link #close} stops it gracefully.
 *
 * <p>The node is a list of components started in order by {@link #start(Builder, BucketStore,
 * Lifecycle)} and stopped in the reverse order by its {@link Lifecycle}. A configured port of 0 is
 * bound first and its port read back ({@link #grpcPort()}, {@link #httpPort()}); an advertised
 * address with port 0 advertises the gRPC port bound.
 */
public final class WeirNode implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(WeirNode.class);

  /** The most the status listener waits for its requests in flight when stopping. */
  static final long STATUS_GRACE_MILLIS = 1000;

  private static final Duration STATUS_GRACE = Duration.ofMillis(STATUS_GRACE_MILLIS);

  private final Lifecycle components;
  private final WeirMember member;
  private final HostPort advertiseAddress;
  private final NodeTls tls;
  private final GrpcHealth grpcHealth;
  private final PrometheusMeterRegistry registry;
  private final EnvoyAdapter envoyAdapter;
  private final HttpListener http;
  private final StatusListener status;
  private final NodeWarmUp.Result warmUp;
  private final ClientGrpcListener grpc;
  private final NodeTracing tracing;
  private final AtomicBoolean closed = new AtomicBoolean();

  private WeirNode(
      Lifecycle components,
      WeirMember member,
      HostPort advertiseAddress,
      NodeTls tls,
      GrpcHealth grpcHealth,
      PrometheusMeterRegistry registry,
      EnvoyAdapter envoyAdapter,
      HttpListener http,
      StatusListener status,
      NodeWarmUp.Result warmUp,
      ClientGrpcListener grpc,
      NodeTracing tracing) {
    this.components = components;
    this.member = member;
    this.advertiseAddress = advertiseAddress;
    this.tls = tls;
    this.grpcHealth = grpcHealth;
    this.registry = registry;
    this.envoyAdapter = envoyAdapter;
    this.http = http;
    this.status = status;
    this.warmUp = warmUp;
    this.grpc = grpc;
    this.tracing = tracing;
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
    private TopLimitedSettings topLimited = TopLimitedSettings.DEFAULTS;
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
    private Sleeper sleeper = Sleeper.SYSTEM;
    private Duration warmUp = Duration.ZERO;
    private TracingSettings tracing = TracingSettings.OFF;

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

    /** Sets the top-limited view's and the over-limit metric's settings (default: on). */
    Builder topLimited(TopLimitedSettings value) {
      this.topLimited = Objects.requireNonNull(value, "topLimited");
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

    /**
     * Sets what waits out {@code WEIR_GRACEFUL_TERMINATION_DELAY} when the node stops (default: the
     * thread's own timer).
     */
    Builder sleeper(Sleeper value) {
      this.sleeper = Objects.requireNonNull(value, "sleeper");
      return this;
    }

    /**
     * Sets the most the node spends warming up its gRPC transport and its decision path before it
     * joins the cluster and opens the HTTP listener ({@code WEIR_WARMUP}; default none): see
     * {@link NodeWarmUp}. The transport's part is skipped when the gRPC listener serves TLS.
     */
    Builder warmUp(Duration value) {
      this.warmUp = Objects.requireNonNull(value, "warmUp");
      return this;
    }

    /**
     * Sets whether and how the node exports traces (default {@link TracingSettings#OFF}: no SDK is
     * built and no interceptor installed).
     */
    Builder tracing(TracingSettings value) {
      this.tracing = Objects.requireNonNull(value, "tracing");
      return this;
    }

    /** Sets the variables named when the gRPC or HTTP listener cannot bind its address. */
    Builder addressVariables(EnvVar grpc, EnvVar http) {
      this.grpcAddressVariable = Objects.requireNonNull(grpc, "grpc");
      this.httpAddressVariable = Objects.requireNonNull(http, "http");
      return this;
    }

    private NodeMember.Settings member(BucketStore store) {
      return new NodeMember.Settings(cluster, discovery, peers, store, ops.limits(), clock);
    }

    private FrontDoors.Settings frontDoors(
        CheckMeter meter, PrometheusMeterRegistry registry, OverLimitRecorder overLimit) {
      return new FrontDoors.Settings(
          ops.limits(), rlqs, clock, meter, registry, extraRoutes, overLimit);
    }

    /**
     * Starts the node: it binds the gRPC port and the peer listener's (when it may have peers),
     * checks that the HTTP and status addresses are free, warms up within {@link #warmUp} (calls to
     * the gRPC port are answered {@code UNAVAILABLE} meanwhile), serves {@code V1} there and {@code
     * PeersV1} on the peer listener (when it may have peers), joins the peers discovery finds, then
     * opens the HTTP listener (and the status listener when configured). Every front door is
     * counted in the node's Prometheus registry, served at {@code GET /metrics}. Client gRPC calls
     * run on the transport's event loops ({@code directExecutor}): a decision answered on this node
     * never changes threads, and nothing a client-facing gRPC handler runs may block (forwarded
     * items complete on the peer clients' threads; the peer listener has its own pool).
     *
     * @throws dev.weir.envoy.config.DescriptorConfigException if the descriptor config is invalid (before the
     *     node serves a rate-limit call; the ports bound so far are released)
     */
    public WeirNode start() throws IOException, dev.weir.envoy.config.DescriptorConfigException {
      return WeirNode.start(
          this, store != null ? store : new ClockBucketStore(clock, config.cacheSize()));
    }
  }

  private static WeirNode start(Builder builder, BucketStore store)
      throws IOException, dev.weir.envoy.config.DescriptorConfigException {
    Lifecycle components = new Lifecycle();
    try {
      return start(builder, store, components);
    } catch (Exception e) {
      components.close();
      throw startFailure(e);
    }
  }

  /**
   * The composition root: starts the node's components in order, each recorded in {@code
   * components} with what stops it, so that a failure or {@link #close()} stops those started in
   * the reverse order.
   */
  private static WeirNode start(Builder b, BucketStore store, Lifecycle components)
      throws Exception {
    OpsSettings ops = b.ops;
    NodeTracing tracing =
        b.tracing.enabled()
            ? components.start("tracing", () -> NodeTracing.start(b.tracing), NodeTracing::close)
            : null;
    PrometheusMeterRegistry registry = PrometheusEndpoint.newRegistry();
    MicrometerMetrics metrics = metrics(registry, store);
    CheckMeter meter = new CheckMeter(metrics);
    components.start("JVM metrics", () -> new JvmMetrics(registry), JvmMetrics::close);
    NodeTls tls = NodeTls.load(ops.tls(), b.clientTls, b.config.advertiseAddress());
    GrpcHealth grpcHealth = new GrpcHealth(b.healthServiceNames);
    ClientGrpcListener grpc =
        components.start(
            "gRPC listener",
            () -> startGrpc(b, tls, grpcHealth, metrics, tracing),
            listener -> listener.server().shutdownNow());
    HostPort advertise = advertised(b.config, grpc.server().getPort());
    if (b.writeAutoCa) {
      tls.writeAutoCa(
          b.autoCaFile != null ? b.autoCaFile : AutoCaFile.byDefault(grpc.server().getPort()),
          advertise);
    }
    ScheduledExecutorService discoveryTimers =
        components.start(
            "discovery timers",
            () -> daemonScheduler("weir-discovery"),
            ExecutorService::shutdownNow);
    WeirMember member =
        components.start(
            "cluster member",
            () -> NodeMember.build(b.member(store), advertise, grpc, tls, discoveryTimers, metrics),
            started -> started.close(Duration.ZERO));
    ClusterMetrics.watch(member.cluster(), metrics);
    TopLimited topLimited =
        b.topLimited.enabled()
            ? new TopLimited(
                new TopLimitedWindow(TopLimitedSettings.WINDOW_MINUTES, b.topLimited.counters()),
                b.clock)
            : null;
    if (topLimited != null) {
      member.cluster().topLimitedFrom(topLimited::view);
    }
    OverLimitRecorder overLimit = overLimitRecorder(topLimited, b.topLimited, registry);
    HttpRoute topLimitedRoute =
        new TopLimitedRoute(topLimited, member.cluster(), b.topLimited).route();
    if (tracing != null) {
      member.cluster().service().traceWith(tracing.cluster());
      member.cluster().peers().traceWith(tracing.cluster());
    }
    HealthChecker health = member.cluster().health();
    DrainingComponent draining = new DrainingComponent();
    health.add(draining);
    EnvoyAdapter envoy =
        b.envoy.enabled()
            ? components.start(
                "Envoy adapter",
                () -> envoy(b, member, registry, meter, overLimit),
                EnvoyAdapter::close)
            : null;
    if (envoy != null && tracing != null) {
      envoy.traceWith(tracing.configMatch());
    }
    if (envoy != null && b.readyNeedsDomain) {
      health.add(new ConfigComponent(envoy::hasDomains));
    }
    Listeners listeners =
        components.start("listeners", Listeners::new, all -> all.stop(ops.drainTimeout()));
    listeners.add("grpc", member::stopServer);
    if (!b.warmUp.isZero()) {
      BindFailure.probe("HTTP", b.httpAddressVariable, b.config.httpAddress());
      if (ops.statusAddress().isPresent()) {
        BindFailure.probe("status", OpsSettings.STATUS_HTTP_ADDRESS, ops.statusAddress().get());
      }
    }
    NodeWarmUp.Result warmUp =
        b.warmUp.isZero()
            ? null
            : NodeWarmUp.run(
                b.warmUp,
                b.clock,
                grpc,
                tls.grpc().isPresent(),
                envoy,
                b.ops.limits());
    FrontDoors doors =
        FrontDoors.serve(member, envoy, grpc, b.frontDoors(meter, registry, overLimit));
    doors.routes().add(topLimitedRoute);
    if (tracing != null) {
      doors.routes().replaceAll(tracing.http()::trace);
    }
    components.start(
        "cluster membership", () -> NodeMember.join(member, b.peers), NodeMember::leave);
    HttpListener http =
        listeners.open(
            "http", () -> startHttp(b, doors.routes(), tls, metrics), HttpListener::stop);
    StatusListener status =
        ops.statusAddress().isEmpty()
            ? null
            : listeners.open(
                "status",
                () -> startStatus(ops, member, tls, registry, topLimitedRoute),
                StatusListener::stop,
                STATUS_GRACE);
    ScheduledExecutorService timers =
        components.start(
            "health and reload timers",
            () -> daemonScheduler("weir-health"),
            ExecutorService::shutdownNow);
    grpcHealth.follow(health);
    grpcHealth.refresh();
    every(timers, Duration.ofMillis(GrpcHealth.REFRESH_MILLIS), grpcHealth::refreshQuietly);
    if (tls.any()) {
      every(timers, tls.reloadInterval(), tls::reload);
    }
    if (envoy != null) {
      envoy.watch(timers);
    }
    components.onStop(
        "graceful termination delay", () -> waitOut(ops.gracefulTerminationDelay(), b.sleeper));
    components.onStop(
        "readiness",
        () -> {
          draining.start();
          grpcHealth.stopServing();
          doors.drainStreams();
        });
    return new WeirNode(
        components,
        member,
        advertise,
        tls,
        grpcHealth,
        registry,
        envoy,
        http,
        status,
        warmUp,
        grpc,
        tracing);
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
      Builder b, NodeTls tls, GrpcHealth health, MicrometerMetrics metrics, NodeTracing tracing)
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
  private static HostPort advertised(WeirConfig config, int grpcPort) {
    HostPort advertise = config.advertiseAddress();
    return advertise.port() == 0 ? advertise.withPort(grpcPort) : advertise;
  }

  private static EnvoyAdapter envoy(
      Builder b,
      WeirMember member,
      PrometheusMeterRegistry registry,
      CheckMeter meter,
      OverLimitRecorder overLimit)
      throws IOException, dev.weir.envoy.config.DescriptorConfigException {
    return EnvoyAdapter.start(
        b.envoy,
        member.service(),
        b.clock,
        new EnvoyMetrics(registry, b.envoyObserver),
        b.ops.limits(),
        meter,
        overLimit);
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

  /**
   * Starts the HTTP listener serving {@code routes}, over HTTPS with the node's identity and
   * client-auth mode when TLS is on.
   */
  private static HttpListener startHttp(
      Builder b, List<HttpRoute> routes, NodeTls tls, MicrometerMetrics metrics)
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
    } catch (BindException e) {
      throw BindFailure.of("HTTP", b.httpAddressVariable, b.config.httpAddress(), e);
    }
  }

  private static StatusListener startStatus(
      OpsSettings ops,
      WeirMember member,
      NodeTls tls,
      PrometheusMeterRegistry registry,
      HttpRoute topLimited)
      throws IOException, GeneralSecurityException {
    HostPort address = ops.statusAddress().orElseThrow();
    try {
      return StatusListener.start(
          address,
          member.cluster().nodeHealth(),
          member.cluster().health(),
          registry,
          tls.node().orElse(null),
          ops.http(),
          List.of(topLimited));
    } catch (BindException e) {
      throw BindFailure.of("status", OpsSettings.STATUS_HTTP_ADDRESS, address, e);
    }
  }

  /** Keeps serving, not ready, for {@code delay}, which load balancers take to deregister. */
  private static void waitOut(Duration delay, Sleeper sleeper) throws InterruptedException {
    if (!delay.isZero()) {
      LOG.info("not ready; serving for {} before stopping", delay);
      sleeper.sleep(delay);
    }
  }

  private static void every(ScheduledExecutorService timers, Duration period, Runnable task) {
    long millis = period.toMillis();
    timers.scheduleWithFixedDelay(task, millis, millis, TimeUnit.MILLISECONDS);
  }

  private static ScheduledExecutorService daemonScheduler(String threadName) {
    return Executors.newSingleThreadScheduledExecutor(
        runnable -> {
          Thread thread = new Thread(runnable, threadName);
          thread.setDaemon(true);
          return thread;
        });
  }

  /** Returns what {@link Builder#start()} throws for the failure {@code e} of a component. */
  private static IOException startFailure(Exception e)
      throws IOException, dev.weir.envoy.config.DescriptorConfigException {
    if (e instanceof dev.weir.envoy.config.DescriptorConfigException config) {
      throw config;
    }
    if (e instanceof NodeMember.DiscoveryFailure discovery) {
      return new IOException(discovery.getMessage(), discovery.getCause());
    }
    if (e instanceof UncheckedIOException unchecked) {
      return unchecked.getCause();
    }
    if (e instanceof RuntimeException runtime) {
      throw runtime;
    }
    if (e instanceof GeneralSecurityException) {
      return new IOException("TLS context cannot be built: " + e.getMessage(), e);
    }
    return e instanceof IOException io ? io : new IOException(e.getMessage(), e);
  }

  /**
   * Sets the {@code grpc.health.v1} status of the node and of {@code pb.gubernator.V1} from
   * readiness: a peer's trouble does not make it {@code NOT_SERVING}.
   */
  void refreshHealth() {
    grpcHealth.refresh();
  }

  /**
   * Re-reads the TLS certificate, key and CA files if they changed and logs the outcome: what was
   * taken up at INFO, each file that could not be used (and keeps its previous contents) at WARN.
   */
  void reloadTls() {
    tls.reload();
  }

  /**
   * Returns the node's TLS identity when TLS is on; peers are called with the same certificate.
   */
  public Optional<TlsIdentity> tlsIdentity() {
    return tls.node();
  }

  /** Returns what the start-up warm-up did, empty when it did not run. */
  Optional<NodeWarmUp.Result> warmUp() {
    return Optional.ofNullable(warmUp);
  }

  /** Returns the node's Prometheus registry, for components that add meters. */
  PrometheusMeterRegistry registry() {
    return registry;
  }

  /** Returns the node's tracing, empty when it is off. */
  Optional<NodeTracing> tracing() {
    return Optional.ofNullable(tracing);
  }

  /** Returns whether the front-door gRPC services are traced (an interceptor is installed). */
  boolean frontDoorTraced() {
    return grpc.traced();
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
    return member.service();
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
    return member.cluster().health();
  }

  /**
   * Stops the node, its components in the reverse of the order they started. Readiness fails
   * first: gRPC health reports NOT_SERVING, {@code GET /readyz} answers 503 and {@code
   * HealthCheck} (on the HTTP and status listeners) answers unhealthy ("shutting down"), and RLQS
   * streams are ended at once with {@code UNAVAILABLE} (their proxies keep their assignments and
   * reconnect to another node at their next report) and new ones are refused, while calls are
   * still answered for {@code WEIR_GRACEFUL_TERMINATION_DELAY}. Then the node leaves the cluster
   * (with hand-off on, every bucket goes to its next owner while the listeners still answer), and
   * all listeners stop taking new calls at once and wait, side by side, up to {@code
   * WEIR_DRAIN_TIMEOUT} for the calls in flight (the status listener, which answers only probes, at
   * most {@value #STATUS_GRACE_MILLIS} ms), after which the rest are cancelled; the Envoy adapter,
   * the peer clients, the cluster's timers and discovery stop only then, so the calls that drain
   * are answered (forwarded to the next owners). So it takes at most the delay + the hand-off + the
   * drain timeout + the time to close the sockets. An interrupt cuts every wait short. Calling it
   * again does nothing.
   */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      components.close();
    }
  }
}
