package dev.weir.server;

import dev.weir.core.cluster.peer.auth.PeerSettings;
import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import dev.weir.core.config.HostPort;
import dev.weir.envoy.EnvoyAdapter;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.metrics.StatsdStats;
import dev.weir.http.HttpListener;
import java.io.IOException;
import java.io.PrintStream;
import java.net.BindException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code ratelimit}: runs a node as a drop-in for envoyproxy/ratelimit (the container image's
 * {@code /bin/ratelimit}), configured by the reference's environment variables with their meanings
 * and defaults ({@link RatelimitSettings}); every reference variable that Weir ignores and that is
 * set is named at start-up ({@link ReferenceEnvironment#notice}). Weir's own {@code WEIR_*}
 * settings for peers, discovery, limits and peer TLS still apply. A bad setting prints its one-line
 * error and exits 2.
 */
final class RatelimitCommand implements Command {

  private static final Logger LOG = LoggerFactory.getLogger(RatelimitCommand.class);

  /** The {@code grpc.health.v1} service name the reference reports its health under. */
  static final String HEALTH_SERVICE_NAME = "ratelimit";

  /** The usage line, printed alone on a usage error. */
  static final String USAGE =
      "usage: java -jar weir.jar ratelimit (settings come from envoyproxy/ratelimit's"
          + " environment variables; see docs/migrating-from-ratelimit.md)";

  /** What {@code ratelimit --help} prints. */
  static final String HELP =
      """
      usage: java -jar weir.jar ratelimit   (the container image's /bin/ratelimit)

      Runs a node as a drop-in for envoyproxy/ratelimit: its environment variables with their
      meanings and defaults (PORT 8080 with /healthcheck and /json, GRPC_PORT 8081, DEBUG_PORT
      6070 with /rlconfig, RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY or
      CONFIG_TYPE=GRPC_XDS_SOTW, USE_STATSD with the reference's stat names, ...). REDIS_*,
      MEMCACHE_* and BACKEND_TYPE are ignored with a notice: counters live in Weir's cluster.
      Weir's WEIR_* peer and discovery settings still apply.
      docs/migrating-from-ratelimit.md lists every variable.

      Exit status: 2 for a bad setting (one line on stderr names it), 1 when the node cannot
      start, e.g. a port in use (one line too; LOG_LEVEL=debug adds the stack trace).\
      """;

  @Override
  public String summary() {
    return "run a node as a drop-in for envoyproxy/ratelimit, from its environment variables";
  }

  @Override
  public String help() {
    return HELP;
  }

  @Override
  public String usage() {
    return USAGE;
  }

  @Override
  public int run(List<String> args, Map<String, String> env, PrintStream out, PrintStream err)
      throws InterruptedException {
    if (!args.isEmpty()) {
      err.println(USAGE);
      return ServeCommand.EXIT_CONFIG;
    }
    int[] status = {0};
    Running running =
        NodeShutdownHook.startStoppingOnExit(
            stopping -> start(env, err, status, stopping),
            started -> {
              LOG.warn("Weir (ratelimit compatibility mode) stopping");
              started.close();
              LOG.warn("Weir (ratelimit compatibility mode) stopped");
            });
    if (running == null) {
      return status[0];
    }
    RatelimitSettings compat = running.settings();
    LOG.warn(
        "Weir started in envoyproxy/ratelimit compatibility mode: grpc={}{} http={} debug={}"
            + " config={} statsd={} prometheus={} tracing={} peers={}",
        compat.grpcAddress(),
        compat.grpcTls().enabled() ? " (TLS)" : "",
        compat.httpAddress(),
        compat.debugAddress(),
        describe(compat.envoy()),
        compat.statsd().map(s -> s.host() + ":" + s.port()).orElse("off"),
        compat.prometheus().map(p -> p.address() + p.path()).orElse("off"),
        compat.tracing().describe(),
        running.node().peers());
    running.node().awaitTermination();
    return 0;
  }

  /**
   * Reads {@code env}, applies its log settings, logs the notice of ignored settings and starts a
   * node; returns it, or null after printing why to {@code err} (after the warnings of unknown
   * {@code WEIR_*}/{@code GUBER_*} variables, when a setting is bad), with the exit status in
   * {@code status[0]}.
   */
  static Running start(Map<String, String> env, PrintStream err, int[] status) {
    return start(env, err, status, () -> false);
  }

  /**
   * Starts a node as {@link #start(Map, PrintStream, int[])} does, its start cut short before it
   * joins the cluster once {@code stopping} says the process was told to stop.
   */
  static Running start(
      Map<String, String> env, PrintStream err, int[] status, BooleanSupplier stopping) {
    List<String> warnings = new ArrayList<>(ReferenceEnvironment.notice(env));
    warnings.addAll(UnknownVariableWarnings.of(env, Map.of(), Optional.empty()));
    RatelimitSettings compat;
    ServeCommand.NodeSettings settings;
    try {
      compat = RatelimitSettings.from(env);
      checkPortsDistinct(compat);
      settings =
          ServeCommand.NodeSettings.read(
                  compat.nodeEnvironment(env), RatelimitSettings.NODE_ADDRESSES)
              .withEnvoy(compat.envoy())
              .withLogFormat(compat.logFormat());
      checkPortsDistinct(compat, settings);
    } catch (ConfigException e) {
      warnings.forEach(err::println);
      err.println(e.getMessage());
      status[0] = ServeCommand.EXIT_CONFIG;
      return null;
    }
    LogSetup.apply(settings.config().logLevel(), settings.logFormat());
    List<String> unshown = UnknownVariableWarnings.report(warnings, LOG, err);
    return start(compat, settings, err, status, stopping, unshown);
  }

  /**
   * A node running in the compatibility mode as {@code settings} ask, with its debug listener, its
   * Prometheus listener (null when off) and its StatsD sender (null when off).
   */
  record Running(
      RatelimitSettings settings,
      WeirNode node,
      HttpListener debug,
      HttpListener prometheus,
      StatsdStats statsd)
      implements AutoCloseable {

    /** Stops the node (draining as it does), then the extra listeners and StatsD. */
    @Override
    public void close() {
      node.close();
      debug.close();
      if (prometheus != null) {
        prometheus.close();
      }
      if (statsd != null) {
        statsd.close();
      }
    }
  }

  /**
   * Starts a node with {@code settings} as {@code compat} asks, printing why to {@code err} when it
   * cannot start (after {@code warnings}, the start-up warnings not printed yet, when a setting is
   * bad); returns it, or null with the exit status in {@code status[0]}. The debug and
   * Prometheus addresses are checked ({@link BindFailure#probe}) before the node starts, so a port
   * in use fails before the warm-up and the join.
   */
  private static Running start(
      RatelimitSettings compat,
      ServeCommand.NodeSettings settings,
      PrintStream err,
      int[] status,
      BooleanSupplier stopping,
      List<String> warnings) {
    try {
      BindFailure.probe("debug", RatelimitSettings.DEBUG_ADDRESS, compat.debugAddress());
      if (compat.prometheus().isPresent()) {
        BindFailure.probe(
            "Prometheus",
            RatelimitSettings.PROMETHEUS_ADDRESS,
            compat.prometheus().get().address());
      }
    } catch (BindException e) {
      err.println(e.getMessage());
      status[0] = ServeCommand.EXIT_START_FAILED;
      return null;
    }
    StatsdStats statsd =
        compat
            .statsd()
            .map(s -> StatsdStats.start(s.host(), s.port(), s.flushInterval(), s.extraTags()))
            .orElse(null);
    WeirNode.Builder builder =
        settings
            .builder()
            .clientTls(compat.grpcTls())
            .readyNeedsDomain(compat.healthyOnlyWithConfig())
            .envoyObserver(statsd == null ? EnvoyMetrics.Observer.NONE : statsd)
            .extraHttpRoutes(health -> List.of(RatelimitHttp.healthcheck(health)))
            .grpcMaxConnectionAge(compat.maxConnectionAge(), compat.maxConnectionAgeGrace())
            .healthServiceNames(List.of(HEALTH_SERVICE_NAME))
            .tracing(compat.tracing())
            .addressVariables(RatelimitSettings.GRPC_ADDRESS, RatelimitSettings.HTTP_ADDRESS)
            .stopRequested(stopping);
    WeirNode node = startNode(builder, err, status, warnings);
    if (node == null) {
      if (statsd != null) {
        statsd.close();
      }
      return null;
    }
    if (statsd != null) {
      node.envoyAdapter().ifPresent(adapter -> statsd.watch(adapter.metrics()));
    }
    HttpListener debug = null;
    HttpListener prometheus = null;
    try {
      debug =
          bind(
              "debug",
              RatelimitSettings.DEBUG_ADDRESS,
              compat.debugAddress(),
              () ->
                  RatelimitHttp.debug(
                      compat.debugAddress(),
                      () -> node.envoyAdapter().flatMap(EnvoyAdapter::config)));
      if (compat.prometheus().isPresent()) {
        RatelimitSettings.Prometheus p = compat.prometheus().get();
        prometheus =
            bind(
                "Prometheus",
                RatelimitSettings.PROMETHEUS_ADDRESS,
                p.address(),
                () -> RatelimitHttp.prometheus(p.address(), p.path(), node.registry()));
      }
    } catch (IOException e) {
      err.println(e.getMessage());
      if (debug != null) {
        debug.close();
      }
      node.close();
      if (statsd != null) {
        statsd.close();
      }
      status[0] = ServeCommand.EXIT_START_FAILED;
      return null;
    }
    return new Running(compat, node, debug, prometheus, statsd);
  }

  /**
   * Starts the node of {@code builder} as {@link ServeCommand#start} does; returns it, or null
   * after printing why to {@code err} with the exit status in {@code status[0]}. An unexpected
   * failure's line names the reference's {@code LOG_LEVEL}, which sets the node's log level in this
   * mode.
   */
  static WeirNode startNode(
      WeirNode.Builder builder, PrintStream err, int[] status, List<String> unknownVariables) {
    return ServeCommand.start(builder, err, status, unknownVariables, RatelimitSettings.LOG_LEVEL);
  }

  private static String describe(EnvoySettings envoy) {
    return envoy.source() == EnvoySettings.Source.XDS
        ? "xds://" + envoy.xds().serverAddress() + " node " + envoy.xds().nodeId()
        : envoy
            .config()
            .map(
                path ->
                    envoy.configKeyPrefix().isEmpty()
                        ? path.toString()
                        : path + " (" + envoy.configKeyPrefix() + "*)")
            .orElse("none");
  }

  /** Opens a listener, naming it and its variable when its address cannot be bound. */
  private static HttpListener bind(
      String listener, EnvVar variable, HostPort address, ListenerStart start) throws IOException {
    try {
      return start.start();
    } catch (IOException e) {
      throw BindFailure.of(listener, variable, address, e);
    }
  }

  /** Opens a listener. */
  @FunctionalInterface
  private interface ListenerStart {
    HttpListener start() throws IOException;
  }

  /** Checks that no two of the gRPC, HTTP, debug and Prometheus listeners take one port. */
  private static void checkPortsDistinct(RatelimitSettings compat) {
    Map<String, HostPort> listeners = new LinkedHashMap<>();
    listeners.put("GRPC_PORT", compat.grpcAddress());
    listeners.put("PORT", compat.httpAddress());
    listeners.put("DEBUG_PORT", compat.debugAddress());
    compat.prometheus().ifPresent(p -> listeners.put("PROMETHEUS_ADDR", p.address()));
    List<Map.Entry<String, HostPort>> all = new ArrayList<>(listeners.entrySet());
    for (int i = 1; i < all.size(); i++) {
      for (int j = 0; j < i; j++) {
        clash(
            all.get(i).getKey(), all.get(i).getValue(), all.get(j).getKey(), all.get(j).getValue());
      }
    }
  }

  /**
   * Checks that the debug and Prometheus listeners take no port of the node's status listener
   * ({@code WEIR_STATUS_HTTP_ADDRESS}) or, when the node may have peers, of its peer listener
   * ({@code WEIR_PEER_ADDRESS}, by default the gRPC host at port {@value
   * PeerSettings#DEFAULT_PORT}), which open only once the node starts.
   */
  private static void checkPortsDistinct(
      RatelimitSettings compat, ServeCommand.NodeSettings settings) {
    EnvReader reader = new EnvReader(settings.environment());
    Map<String, HostPort> nodeListeners = new LinkedHashMap<>();
    settings
        .ops()
        .statusAddress()
        .ifPresent(
            status ->
                nodeListeners.put(
                    reader.nameSet(OpsSettings.STATUS_HTTP_ADDRESS) + "='" + status + "'", status));
    if (ServeCommand.mayHavePeers(settings.discovery(), settings.cluster(), settings.config())) {
      HostPort peer = settings.peers().address();
      nodeListeners.put(
          PeerSettings.ADDRESS.name()
              + "='"
              + peer
              + "'"
              + (reader.lookup(PeerSettings.ADDRESS).isPresent()
                  ? ""
                  : " (not set; the default is the gRPC host at port "
                      + PeerSettings.DEFAULT_PORT
                      + ")"),
          peer);
    }
    Map<String, HostPort> extraListeners = new LinkedHashMap<>();
    extraListeners.put("DEBUG_PORT", compat.debugAddress());
    compat.prometheus().ifPresent(p -> extraListeners.put("PROMETHEUS_ADDR", p.address()));
    extraListeners.forEach(
        (name, address) ->
            nodeListeners.forEach(
                (otherSetting, other) ->
                    refuseClash(name + "=" + address.port(), address, otherSetting, other)));
  }

  /** Refuses the reference's port variables {@code name} and {@code otherName} taking one port. */
  private static void clash(String name, HostPort address, String otherName, HostPort other) {
    refuseClash(name + "=" + address.port(), address, otherName + "=" + other.port(), other);
  }

  /**
   * Throws {@link ConfigException} when {@code address} and {@code other} take one port on the same
   * host (a wildcard host overlaps every host); port 0 never clashes. {@code setting} and {@code
   * otherSetting} name each variable with its value.
   */
  private static void refuseClash(
      String setting, HostPort address, String otherSetting, HostPort other) {
    boolean sameHost =
        address.isWildcard() || other.isWildcard() || address.host().equalsIgnoreCase(other.host());
    if (address.port() != 0 && address.port() == other.port() && sameHost) {
      throw new ConfigException(
          setting
              + " is not valid: the port is taken by "
              + otherSetting
              + "; give each listener a port of its own");
    }
  }
}
