package dev.weir.server;

import dev.weir.core.WeirMember;
import dev.weir.core.cluster.ClusterNode;
import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.peer.auth.PeerSettings;
import dev.weir.core.config.EnvVar;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.health.HealthChecker;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.store.BucketStore;
import dev.weir.core.store.ClockBucketStore;
import dev.weir.core.time.Clock;
import dev.weir.core.time.SystemClock;
import dev.weir.core.toplimited.OverLimitRecorder;
import dev.weir.envoy.EnvoyAdapter;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.rlqs.RlqsSettings;
import dev.weir.gubernator.NativeTracing;
import dev.weir.http.HttpListener;
import dev.weir.http.HttpRoute;
import dev.weir.tls.TlsIdentity;
import dev.weir.tls.TlsSettings;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running {@code weir.jar} node, the process around a {@link WeirMember}: the rate-limit
 * service, its gRPC listener ({@link ClientGrpcListener}),
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

  private final Lifecycle components;
  private final WeirMember member;
  private final ClusterNode cluster;
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
      ClusterAssembly cluster,
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
    this.member = cluster.member();
    this.cluster = cluster.node();
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
   * The failure of a start cut short because the process was told to stop ({@link
   * Builder#stopRequested}): the node did not join the cluster and opened no HTTP listener.
   */
  static final class StartStopped extends IOException {
    StartStopped() {
      super("stopped while starting: the node did not join the cluster");
    }
  }

  /**
   * A builder of a {@link WeirNode}: what is not set takes its default (a single node found by
   * static discovery, no Envoy descriptor config, default input limits and no TLS, the system
   * clock, a Caffeine store of {@code config.cacheSize()} buckets).
   */
  public static final class Builder {
    final WeirConfig config;
    ClusterSettings cluster = ClusterSettings.defaults();
    DiscoverySettings discovery = DiscoverySettings.staticPeers();
    EnvoySettings envoy = EnvoySettings.DEFAULTS;
    RlqsSettings rlqs = RlqsSettings.DEFAULTS;
    OpsSettings ops = OpsSettings.DEFAULTS;
    TopLimitedSettings topLimited = TopLimitedSettings.DEFAULTS;
    PeerSettings peers;
    Clock clock = SystemClock.INSTANCE;
    BucketStore store;
    TlsSettings clientTls = TlsSettings.DISABLED;
    boolean readyNeedsDomain = true;
    EnvoyMetrics.Observer envoyObserver = EnvoyMetrics.Observer.NONE;
    Function<HealthChecker, List<HttpRoute>> extraRoutes = health -> List.of();
    Duration maxConnectionAge;
    Duration maxConnectionAgeGrace;
    List<String> healthServiceNames = List.of();
    EnvVar grpcAddressVariable = WeirConfig.GRPC_ADDRESS;
    EnvVar httpAddressVariable = WeirConfig.HTTP_ADDRESS;
    EnvVar statusAddressVariable = OpsSettings.STATUS_HTTP_ADDRESS;
    boolean writeAutoCa;
    Path autoCaFile;
    Sleeper sleeper = Sleeper.SYSTEM;
    Duration warmUp = Duration.ZERO;
    BooleanSupplier stopRequested = () -> false;
    TracingSettings tracing = TracingSettings.OFF;

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
     * empty to {@link AutoCaFile#byDefault} of its gRPC port, before any listener opens and once
     * its gRPC address has been bound and released, so that a gRPC port in use stops the start
     * before the file is written (with gRPC port 0, once the gRPC listener picked its port;
     * default: not written). Another process can still take the port between that check and the
     * listener's bind; the start then fails with the file written.
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
     * Sets what says that the process was told to stop while the node starts (default: never): the
     * warm-up then ends at once and {@link #start()} throws {@link StartStopped} before the node
     * joins the cluster, its snapshot written back.
     */
    Builder stopRequested(BooleanSupplier value) {
      this.stopRequested = Objects.requireNonNull(value, "stopRequested");
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

    /**
     * Sets the variables named when the gRPC, HTTP or status listener cannot bind its address
     * (the names the user set, such as a {@code GUBER_*} alias).
     */
    Builder addressVariables(EnvVar grpc, EnvVar http, EnvVar status) {
      this.statusAddressVariable = Objects.requireNonNull(status, "status");
      return addressVariables(grpc, http);
    }

    NodeMember.Settings member(BucketStore store) {
      return new NodeMember.Settings(cluster, discovery, peers, store, ops.limits(), clock);
    }

    FrontDoors.Settings frontDoors(
        CheckMeter meter,
        PrometheusMeterRegistry registry,
        OverLimitRecorder overLimit,
        NativeTracing tracing) {
      return new FrontDoors.Settings(
          ops.limits(), rlqs, clock, meter, registry, extraRoutes, overLimit, tracing);
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
   * The composition root: starts the node's parts in order, each component recorded in {@code
   * components} with what stops it, so that a failure or {@link #close()} stops those started in
   * the reverse order. The order: the transport (the gRPC port is bound first), the cluster member,
   * the front doors on the gRPC port (after any warm-up), joining the cluster, the HTTP and status
   * listeners, and last the operations timers and the first stop steps.
   */
  private static WeirNode start(Builder b, BucketStore store, Lifecycle components)
      throws Exception {
    TransportAssembly transport = TransportAssembly.start(b, store, components);
    ClusterAssembly cluster = ClusterAssembly.start(b, store, transport, components);
    FrontDoorAssembly doors = FrontDoorAssembly.start(b, transport, cluster, components);
    if (b.stopRequested.getAsBoolean()) {
      throw new StartStopped();
    }
    WeirMember member = cluster.member();
    components.start(
        "cluster membership", () -> NodeMember.join(member, b.peers), NodeMember::leave);
    HttpListener http = doors.openHttp(b, transport);
    StatusListener status = doors.openStatus(b, transport, cluster);
    OperationsAssembly.start(b, transport, cluster, doors, components);
    return new WeirNode(
        components,
        cluster,
        transport.advertise(),
        transport.tls(),
        transport.grpcHealth(),
        transport.registry(),
        doors.envoy(),
        http,
        status,
        doors.warmUp(),
        transport.grpc(),
        transport.tracing());
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
    return cluster;
  }

  /** Returns the members of the node's current hash ring, itself included. */
  public List<String> peers() {
    return cluster.membership().ring().peers();
  }

  /**
   * Returns the node's health components (discovery, peers, draining and, serving Envoy, config);
   * readiness is {@link HealthChecker#ready()}.
   */
  public HealthChecker health() {
    return cluster.health();
  }

  /**
   * Stops the node, its components in the reverse of the order they started. Readiness fails first:
   * gRPC health reports NOT_SERVING, {@code GET /readyz} answers 503 and {@code HealthCheck} (on
   * the HTTP and status listeners) answers unhealthy ("shutting down"), and RLQS streams are ended
   * at once with {@code UNAVAILABLE} (their proxies keep their assignments and reconnect to another
   * node at their next report) and new ones are refused, while calls are still answered for {@code
   * WEIR_GRACEFUL_TERMINATION_DELAY}. Then the node leaves the cluster (with hand-off on, every
   * bucket goes to its next owner while the listeners still answer), and all listeners stop taking
   * new calls at once and wait, side by side, up to {@code WEIR_DRAIN_TIMEOUT} for the calls in
   * flight (the status listener, which answers only probes, at most {@value
   * FrontDoorAssembly#STATUS_GRACE_MILLIS} ms), after which the rest are cancelled; the Envoy
   * adapter, the peer clients, the cluster's timers and discovery stop only then, so the calls that
   * drain are answered (forwarded to the next owners). So it takes at most the delay + the hand-off
   * + the drain timeout + the time to close the sockets. An interrupt cuts every wait short.
   * Calling it again does nothing.
   */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      components.close();
    }
  }
}
