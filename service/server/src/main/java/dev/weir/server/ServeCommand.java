package dev.weir.server;

import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.peer.auth.PeerSettings;
import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EffectiveSettings;
import dev.weir.core.config.EnvFile;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import dev.weir.core.config.HostAddressResolver;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.discovery.DiscoveryEnv;
import dev.weir.core.discovery.PeerAddress;
import dev.weir.core.discovery.StaticDiscovery;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.config.DescriptorConfigException;
import dev.weir.envoy.rlqs.RlqsSettings;
import java.io.IOException;
import java.io.PrintStream;
import java.net.BindException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a node until the process is told to stop: {@code [--config FILE]}. A bad setting prints its
 * one-line error to stderr and exits with {@value #EXIT_CONFIG}.
 */
final class ServeCommand implements Command {

  /** The exit status of a start-up refused for bad configuration or arguments. */
  static final int EXIT_CONFIG = 2;

  /** The exit status of a node that could not start (for example a port in use). */
  static final int EXIT_START_FAILED = 1;

  /** The peer discovery types this build offers; the first is the default. */
  static final List<String> DISCOVERY_TYPES = List.of("static", "etcd", "k8s", "dns");

  private static final Logger LOG = LoggerFactory.getLogger(ServeCommand.class);

  /** How many Envoy domains the start-up line names. */
  static final int DOMAINS_SHOWN = 20;

  /** The usage line, printed first by {@code --help}. */
  static final String USAGE = "usage: java -jar weir.jar [serve] [--config FILE]";

  /** What {@code serve --help} prints. */
  static final String HELP =
      USAGE
          + """


      Runs a node until SIGTERM or Ctrl-C: Gubernator's pb.gubernator.V1 over gRPC and HTTP/JSON,
      and Envoy's rate-limit service when WEIR_ENVOY_CONFIG is set, or
      WEIR_ENVOY_CONFIG_SOURCE=xds (server WEIR_ENVOY_XDS_SERVER_URL, default localhost:18000).
        --config FILE  also read KEY=VALUE lines from FILE (a line starting with # is a comment;
                       a # after a value is part of it); the environment wins over the file

      Settings are environment variables; the first ones to know:
        WEIR_GRPC_ADDRESS   host:port of the gRPC listener (default localhost:1051)
        WEIR_HTTP_ADDRESS   host:port of the HTTP/JSON listener (default localhost:1050)
        WEIR_STATIC_PEERS   every node's gRPC address, this one included: host:port[@peerPort],...
        WEIR_PEER_SECRET    the secret the nodes of a cluster share (or TLS, WEIR_TLS_*)
        WEIR_ENVOY_CONFIG   a descriptor YAML file or folder: serves Envoy's ShouldRateLimit
        WEIR_LOG_LEVEL      trace, debug, info (default), warn or error
      README.md#configuration lists every variable; docs/weir.env.example is a --config file
      with each of them commented out.

      Exit status: 2 for a bad setting or argument (one line on stderr names it), 1 when the
      node cannot start, e.g. a port in use (one line too; WEIR_LOG_LEVEL=debug adds the stack
      trace); after a graceful stop, 143 on SIGTERM and 130 on Ctrl-C (SIGINT).\
      """;

  @Override
  public String summary() {
    return "run a node";
  }

  @Override
  public String help() {
    return HELP;
  }

  @Override
  public String usage() {
    return USAGE;
  }

  /**
   * Everything a node is started with, read from the environment.
   *
   * @param config the node's addresses, cache size and log level
   * @param envoy the Envoy adapter's settings
   * @param rlqs the settings of Envoy's rate-limit quota service (RLQS)
   * @param logFormat the log line format
   * @param ops limits, TLS, HTTP capacity, status listener, shutdown timing
   * @param cluster ring, batching, GLOBAL and hand-off settings
   * @param discovery how peers are found
   * @param peers the peer listener and its authentication
   * @param autoCaFile where the generated cluster CA is written, if anywhere
   * @param warmUp the most the node spends warming up its transport and decision path before it
   *     joins and serves HTTP
   * @param topLimited the top-limited view's and the over-limit metric's settings
   * @param environment the variables read, for the start-up line
   */
  record NodeSettings(
      WeirConfig config,
      EnvoySettings envoy,
      RlqsSettings rlqs,
      LogSetup.Format logFormat,
      OpsSettings ops,
      ClusterSettings cluster,
      DiscoverySettings discovery,
      PeerSettings peers,
      Optional<Path> autoCaFile,
      Duration warmUp,
      TopLimitedSettings topLimited,
      Map<String, String> environment) {

    /**
     * Reads the settings from {@code env} and checks that they fit together (distinct ports, an
     * authenticated cluster whose members can verify each other, this node's own static peer
     * entry); a bad value throws {@link ConfigException}.
     */
    static NodeSettings read(Map<String, String> env) {
      return read(env, Map.of());
    }

    /**
     * Reads the settings as {@link #read(Map)} does, naming each variable of {@code setFrom}'s keys
     * in a port clash as the variable it maps to: the one the user set, from which the key's value
     * was made.
     */
    static NodeSettings read(Map<String, String> env, Map<EnvVar, EnvVar> setFrom) {
      EnvReader reader = new EnvReader(env);
      WeirConfig config = WeirConfig.from(reader, HostAddressResolver.system());
      EnvoySettings envoy = EnvoySettings.from(reader);
      RlqsSettings rlqs = RlqsSettings.from(reader);
      ClusterSettings cluster = ClusterSettings.from(reader, DISCOVERY_TYPES);
      DiscoverySettings discovery =
          DiscoverySettings.fromEnv(env, config.advertiseAddress().toString());
      LogSetup.Format logFormat = LogSetup.format(reader);
      OpsSettings ops = OpsSettings.from(reader);
      PeerSettings peers = PeerSettings.from(reader, config.grpcAddress());
      Optional<Path> autoCaFile = AutoCaFile.configured(reader, ops.tls());
      Duration warmUp = NodeWarmUp.budget(reader);
      boolean mayHavePeers = mayHavePeers(discovery, cluster, config);
      String advertised = config.advertiseAddress().toString();
      if (mayHavePeers && discovery.advertiseAddress(advertised).equals(advertised)) {
        config.checkPeersCanCall(reader);
      }
      ops.checkPortsDistinct(
          config,
          mayHavePeers ? Optional.of(peers.address()) : Optional.empty(),
          var -> setFrom.containsKey(var) ? setFrom.get(var).name() : reader.nameSet(var));
      peers.checkAuthenticated(ops.tls().enabled(), mayHavePeers);
      if (mayHavePeers) {
        ops.tls().checkPeerTrust(reader, peersFrom(discovery, reader));
        ops.tls().checkPeerNames(reader, peersFrom(discovery, reader));
        checkOwnPeerPort(discovery, cluster, config, peers, reader);
      }
      TopLimitedSettings topLimited = TopLimitedSettings.from(reader);
      return new NodeSettings(
          config, envoy, rlqs, logFormat, ops, cluster, discovery, peers, autoCaFile, warmUp,
          topLimited, env);
    }

    /** Returns these settings with {@code value} as the Envoy adapter's. */
    NodeSettings withEnvoy(EnvoySettings value) {
      return new NodeSettings(
          config, value, rlqs, logFormat, ops, cluster, discovery, peers, autoCaFile, warmUp,
          topLimited, environment);
    }

    /** Returns these settings with {@code value} as the log line format. */
    NodeSettings withLogFormat(LogSetup.Format value) {
      return new NodeSettings(
          config, envoy, rlqs, value, ops, cluster, discovery, peers, autoCaFile, warmUp,
          topLimited, environment);
    }

    /** Returns a builder of a node with these settings. */
    WeirNode.Builder builder() {
      EnvReader reader = new EnvReader(environment);
      return WeirNode.builder(config)
          .addressVariables(
              reader.asSet(WeirConfig.GRPC_ADDRESS),
              reader.asSet(WeirConfig.HTTP_ADDRESS),
              reader.asSet(OpsSettings.STATUS_HTTP_ADDRESS))
          .cluster(cluster)
          .discovery(discovery)
          .envoy(envoy)
          .rlqs(rlqs)
          .ops(ops)
          .peers(peers)
          .writeAutoCa(autoCaFile)
          .warmUp(warmUp)
          .topLimited(topLimited)
          .tracing(TracingSettings.fromOtel(environment));
    }
  }

  /**
   * Starts a node from {@code builder}, printing why to {@code err} when it cannot start (after
   * {@code unknownVariables}, the warnings of unknown variables, when a setting is bad); returns
   * the node, or null with the exit status in {@code status[0]} (a start cut short by a stop is
   * logged, not printed: the JVM's exit status is then the signal's). Any other failure of a
   * component is one line too, exit status {@value #EXIT_START_FAILED}, its stack trace logged at
   * debug level.
   */
  static WeirNode start(
      WeirNode.Builder builder, PrintStream err, int[] status, List<String> unknownVariables) {
    return start(builder, err, status, unknownVariables, WeirConfig.LOG_LEVEL);
  }

  /**
   * Starts a node as {@link #start(WeirNode.Builder, PrintStream, int[], List)} does, the line of
   * an unexpected failure naming {@code logLevel} as the variable whose {@code debug} logs the
   * stack trace.
   */
  static WeirNode start(
      WeirNode.Builder builder,
      PrintStream err,
      int[] status,
      List<String> unknownVariables,
      EnvVar logLevel) {
    try {
      return builder.start();
    } catch (DescriptorConfigException e) {
      unknownVariables.forEach(err::println);
      e.errors().forEach(err::println);
      status[0] = EXIT_CONFIG;
    } catch (ConfigException e) {
      unknownVariables.forEach(err::println);
      err.println(e.getMessage());
      status[0] = EXIT_CONFIG;
    } catch (BindException e) {
      err.println(e.getMessage());
      status[0] = EXIT_START_FAILED;
    } catch (WeirNode.StartStopped e) {
      LOG.info(e.getMessage());
    } catch (IOException e) {
      err.println("cannot start: " + e);
      status[0] = EXIT_START_FAILED;
    } catch (RuntimeException e) {
      LOG.debug("the node could not start", e);
      err.println(
          "cannot start: "
              + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage())
              + " ("
              + logLevel.name()
              + "=debug logs the stack trace)");
      status[0] = EXIT_START_FAILED;
    }
    return null;
  }

  @Override
  public int run(List<String> args, Map<String, String> env, PrintStream out, PrintStream err)
      throws InterruptedException {
    NodeSettings read;
    List<String> unknownVariables = List.of();
    try {
      Optional<Path> file = configFile(args);
      Map<String, String> fileValues = file.map(EnvFile::read).orElse(Map.of());
      unknownVariables = UnknownVariableWarnings.of(env, fileValues, file);
      read = NodeSettings.read(EnvFile.mergeUnder(fileValues, env));
    } catch (ConfigException e) {
      unknownVariables.forEach(err::println);
      err.println(e.getMessage());
      return EXIT_CONFIG;
    }
    LogSetup.apply(read.config().logLevel(), read.logFormat());
    List<String> warnings = UnknownVariableWarnings.report(unknownVariables, LOG, err);
    int[] status = {0};
    WeirNode node =
        NodeShutdownHook.startStoppingOnExit(
            stopping ->
                start(read.builder().stopRequested(stopping), err, status, warnings),
            started -> {
              LOG.info("Weir node stopping");
              started.close();
              LOG.info("Weir node stopped");
            });
    if (node == null) {
      return status[0];
    }
    LOG.info(
        startedLine(
            read.config(),
            read.ops(),
            node,
            read.cluster(),
            settings(read.environment())));
    LOG.info(envoyLine(read.envoy(), node.envoyDomains()));
    node.awaitTermination();
    return 0;
  }

  /**
   * Returns the line saying whether Envoy's rate-limit service is on and, when it is, its config
   * path or xDS server and the domains loaded (the first {@value #DOMAINS_SHOWN}, then how many
   * more).
   */
  static String envoyLine(EnvoySettings envoy, Optional<List<String>> domains) {
    if (domains.isEmpty() || !envoy.enabled()) {
      return "Envoy rate-limit service: off (set WEIR_ENVOY_CONFIG to a descriptor YAML file or"
          + " folder, or WEIR_ENVOY_CONFIG_SOURCE=xds (server WEIR_ENVOY_XDS_SERVER_URL, default"
          + " localhost:18000), to serve ShouldRateLimit and POST /json)";
    }
    List<String> loaded = domains.get();
    String listed =
        loaded.isEmpty()
            ? "no domain yet ("
                + (envoy.source() == EnvoySettings.Source.XDS
                    ? "waiting for the xDS server's first set"
                    : envoy.variables().forceStart())
                + ")"
            : loaded.size()
                + (loaded.size() == 1 ? " domain: " : " domains: ")
                + String.join(", ", loaded.subList(0, Math.min(DOMAINS_SHOWN, loaded.size())))
                + (loaded.size() > DOMAINS_SHOWN
                    ? " and " + (loaded.size() - DOMAINS_SHOWN) + " more"
                    : "");
    String source =
        envoy.source() == EnvoySettings.Source.XDS
            ? EnvoySettings.CONFIG_SOURCE.name()
                + "=xds from "
                + envoy.xds().serverAddress()
                + " as node "
                + envoy.xds().nodeId()
            : EnvoySettings.CONFIG.name() + "=" + envoy.config().get();
    return "Envoy rate-limit service: on, " + source + ", " + listed;
  }

  /**
   * Returns the start-up line: the version, the addresses and ports, the peers and, when any is
   * set, the {@code WEIR_*}/{@code GUBER_*} variables with secrets masked.
   */
  static String startedLine(
      WeirConfig config, OpsSettings ops, WeirNode node, ClusterSettings cluster, String settings) {
    return "Weir node started: version="
        + BuildInfo.version()
        + " "
        + config.describe()
        + " status_address="
        + ops.statusAddress().map(Object::toString).orElse("off")
        + " grpc_port="
        + node.grpcPort()
        + " http_port="
        + node.httpPort()
        + " status_port="
        + (node.statusPort().isPresent() ? node.statusPort().getAsInt() : "off")
        + " peer_port="
        + (node.peerPort().isPresent() ? node.peerPort().getAsInt() : "off")
        + " peers="
        + node.peers()
        + " handoff="
        + cluster.handoff()
        + " peer_failure_mode="
        + cluster.peerFailureMode().value()
        + (settings.isEmpty() ? "" : " settings: " + settings);
  }

  /**
   * Returns the start-up line's list of the set {@code WEIR_*}/{@code GUBER_*} variables of {@code
   * env}, the values of secrets masked, and of unknown variables closest to a secret's name too.
   */
  static String settings(Map<String, String> env) {
    return EffectiveSettings.describe(env, UnknownVariableWarnings.KNOWN);
  }

  /**
   * Returns whether the node may have peers: any discovery but a static list of itself alone (which
   * opens no peer listener).
   */
  static boolean mayHavePeers(
      DiscoverySettings discovery, ClusterSettings cluster, WeirConfig config) {
    return discovery.type() != DiscoverySettings.Type.STATIC
        || !new StaticDiscovery(config.advertiseAddress().toString(), cluster.staticPeers())
            .onlySelf();
  }

  /**
   * Checks that the other nodes can call this node's peer listener ({@code WEIR_PEER_ADDRESS}).
   * With a static peer list, an entry of this node that names its peer port ({@code
   * host:port@peerPort}) must name the port the listener binds, and the listener must not be on
   * port 0, which takes whatever port is free at start: no entry can name it, and the other nodes
   * call an entry without {@code @peerPort} at the peer port they share. With {@code dns} or
   * {@code k8s} discovery every node calls its peers at its own peer port, so port 0 is refused
   * too; an etcd registration names the port bound, so any port serves.
   *
   * @throws ConfigException naming the variables, their values and what would agree
   */
  static void checkOwnPeerPort(
      DiscoverySettings discovery,
      ClusterSettings cluster,
      WeirConfig config,
      PeerSettings peers,
      EnvReader reader) {
    int port = peers.address().port();
    if (discovery.type() == DiscoverySettings.Type.ETCD) {
      return;
    }
    if (discovery.type() != DiscoverySettings.Type.STATIC) {
      if (port == 0) {
        throw new ConfigException(
            peerAddressSetting(peers, reader)
                + " is not valid with "
                + peersFrom(discovery, reader)
                + ": port 0 has this node listen for peers on a port the system picks at start,"
                + " but with this discovery every node calls its peers at its own peer port; set "
                + PeerSettings.ADDRESS.name()
                + " to a port of 1 to 65535 that every node shares (default "
                + PeerSettings.DEFAULT_PORT
                + ")");
      }
      return;
    }
    String self = config.advertiseAddress().toString();
    for (String entry : cluster.staticPeers()) {
      StaticDiscovery.Entry parsed = StaticDiscovery.parse(entry);
      if (!parsed.member().equals(self) || parsed.peerAddress().isEmpty()) {
        continue;
      }
      int listed = PeerAddress.portOf(parsed.peerAddress().get());
      if (listed == port && port != 0) {
        continue;
      }
      String address =
          reader
              .lookup(PeerSettings.ADDRESS)
              .map(s -> s.variable() + "='" + s.value() + "'")
              .orElse(PeerSettings.ADDRESS.name() + " (unset, so " + peers.address() + ")");
      throw new ConfigException(
          reader.nameSet(ClusterSettings.STATIC_PEERS)
              + " lists this node as '"
              + entry.trim()
              + "', with its peer listener on port "
              + listed
              + ", but "
              + address
              + (port == 0
                  ? " has it listen for peers on a port the system picks at start (port 0), which no"
                      + " static entry can name, so peers could not call it; set "
                  : " has it listen for peers on port "
                      + port
                      + ", so peers would call a port it does not listen on; make the entry "
                      + parsed.member()
                      + "@"
                      + port
                      + " (or "
                      + parsed.member()
                      + " alone), or set ")
              + PeerSettings.ADDRESS.name()
              + " to port "
              + listed);
    }
    if (port == 0) {
      throw new ConfigException(
          peerAddressSetting(peers, reader)
              + " is not valid with "
              + reader.nameSet(ClusterSettings.STATIC_PEERS)
              + " listing other nodes: port 0 has this node listen for peers on a port the system"
              + " picks at start, which the other nodes cannot know, so they could not call it;"
              + " set "
              + PeerSettings.ADDRESS.name()
              + " to a port of 1 to 65535, the peer port the nodes share (default "
              + PeerSettings.DEFAULT_PORT
              + ") or the one this node's entry names as host:port@peerPort");
    }
  }

  /** Returns {@code WEIR_PEER_ADDRESS='<value>'}, the value set or else the address used. */
  private static String peerAddressSetting(PeerSettings peers, EnvReader reader) {
    String value =
        reader
            .lookup(PeerSettings.ADDRESS)
            .map(EnvReader.Setting::value)
            .orElse(peers.address().toString());
    return PeerSettings.ADDRESS.name() + "='" + value + "'";
  }

  /** Says why a node that {@link #mayHavePeers} may: its discovery, or its static peer list. */
  static String peersFrom(DiscoverySettings discovery, EnvReader reader) {
    return discovery.type() == DiscoverySettings.Type.STATIC
        ? reader.nameSet(ClusterSettings.STATIC_PEERS) + " lists other nodes"
        : reader.nameSet(DiscoveryEnv.var("PEER_DISCOVERY_TYPE")) + "=" + discovery.type().label();
  }

  /** Returns the {@code --config} file {@code args} name, if any. */
  static Optional<Path> configFile(List<String> args) {
    Path file = null;
    for (int i = 0; i < args.size(); i++) {
      String arg = args.get(i);
      if (arg.equals("--config") || arg.startsWith("--config=")) {
        String value =
            arg.equals("--config")
                ? (i + 1 < args.size() ? args.get(++i) : null)
                : arg.substring("--config=".length());
        if (value == null || value.isBlank()) {
          throw badArgument(
              arg,
              "--config needs a FILE of KEY=VALUE lines, e.g. --config weir.env"
                  + (value == null ? "" : "; got '" + value + "'"));
        }
        file = Path.of(value);
      } else if (Main.COMMANDS.containsKey(arg) && file != null && !arg.equals("serve")) {
        throw badArgument(
            arg,
            "--config FILE belongs to serve (java -jar weir.jar serve --config FILE); "
                + arg
                + " takes no --config; its usage is "
                + Main.COMMANDS.get(arg).usage().substring("usage: ".length())
                + "; "
                + Main.HELP_POINTER);
      } else if (Main.COMMANDS.containsKey(arg)) {
        throw badArgument(
            arg,
            "the subcommand comes first, once; "
                + Main.COMMANDS.get(arg).usage()
                + "; "
                + Main.HELP_POINTER);
      } else {
        throw badArgument(
            arg,
            "expected --config FILE or a subcommand of "
                + Main.COMMANDS.keySet()
                + "; "
                + Main.HELP_POINTER);
      }
    }
    return Optional.ofNullable(file);
  }

  /** Returns the error for command-line argument {@code arg}: it is not valid, and {@code why}. */
  private static ConfigException badArgument(String arg, String why) {
    return new ConfigException("argument '" + arg + "' is not valid: " + why);
  }
}
