package dev.weir.server;

import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.peer.auth.PeerSettings;
import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EffectiveSettings;
import dev.weir.core.discovery.DiscoverySettings;
import dev.weir.core.discovery.StaticDiscovery;
import dev.weir.core.config.EnvFile;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.HostAddressResolver;
import dev.weir.core.config.WeirConfig;
import dev.weir.envoy.EnvoySettings;
import java.io.IOException;
import java.io.PrintStream;
import java.net.BindException;
import java.nio.file.Path;
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

  /**
   * Everything a node is started with, read from the environment.
   *
   * @param config the node's addresses, cache size and log level
   * @param envoy the Envoy adapter's settings
   * @param logFormat the log line format
   * @param ops limits, TLS, HTTP capacity, status listener, shutdown timing
   * @param cluster ring, batching, GLOBAL and hand-off settings
   * @param discovery how peers are found
   * @param peers the peer listener and its authentication
   * @param environment the variables read, for the start-up line
   */
  record NodeSettings(
      WeirConfig config,
      EnvoySettings envoy,
      LogSetup.Format logFormat,
      OpsSettings ops,
      ClusterSettings cluster,
      DiscoverySettings discovery,
      PeerSettings peers,
      Map<String, String> environment) {

    /**
     * Reads the settings from {@code env} and checks that they fit together (distinct ports, an
     * authenticated cluster); a bad value throws {@link ConfigException}.
     */
    static NodeSettings read(Map<String, String> env) {
      EnvReader reader = new EnvReader(env);
      WeirConfig config = WeirConfig.from(reader, HostAddressResolver.system());
      ClusterSettings cluster = ClusterSettings.from(reader, DISCOVERY_TYPES);
      DiscoverySettings discovery =
          DiscoverySettings.fromEnv(env, config.advertiseAddress().toString());
      OpsSettings ops = OpsSettings.from(reader);
      PeerSettings peers = PeerSettings.from(reader, config.grpcAddress());
      NodeSettings settings =
          new NodeSettings(
              config,
              EnvoySettings.from(reader),
              LogSetup.format(reader),
              ops,
              cluster,
              discovery,
              peers,
              env);
      boolean mayHavePeers = mayHavePeers(discovery, cluster, config);
      ops.checkPortsDistinct(
          config, mayHavePeers ? Optional.of(peers.address()) : Optional.empty());
      peers.checkAuthenticated(ops.tls().enabled(), mayHavePeers);
      return settings;
    }

    /** Returns these settings with {@code value} as the Envoy adapter's. */
    NodeSettings withEnvoy(EnvoySettings value) {
      return new NodeSettings(
          config, value, logFormat, ops, cluster, discovery, peers, environment);
    }

    /** Returns these settings with {@code value} as the log line format. */
    NodeSettings withLogFormat(LogSetup.Format value) {
      return new NodeSettings(config, envoy, value, ops, cluster, discovery, peers, environment);
    }

    /** Returns a builder of a node with these settings. */
    WeirNode.Builder builder() {
      return WeirNode.builder(config)
          .cluster(cluster)
          .discovery(discovery)
          .envoy(envoy)
          .ops(ops)
          .peers(peers);
    }
  }

  /**
   * Starts a node from {@code builder}, printing why to {@code err} when it cannot start; returns
   * the node, or null with the exit status in {@code status[0]}.
   */
  static WeirNode start(WeirNode.Builder builder, PrintStream err, int[] status) {
    try {
      return builder.start();
    } catch (dev.weir.envoy.config.ConfigException e) {
      e.errors().forEach(err::println);
      status[0] = EXIT_CONFIG;
    } catch (BindException e) {
      err.println(e.getMessage());
      status[0] = EXIT_START_FAILED;
    } catch (IOException e) {
      err.println("cannot start: " + e);
      status[0] = EXIT_START_FAILED;
    }
    return null;
  }

  @Override
  public int run(List<String> args, Map<String, String> env, PrintStream out, PrintStream err)
      throws InterruptedException {
    NodeSettings read;
    try {
      read = NodeSettings.read(environment(args, env));
    } catch (ConfigException e) {
      err.println(e.getMessage());
      return EXIT_CONFIG;
    }
    WeirConfig config = read.config();
    ClusterSettings cluster = read.cluster();
    OpsSettings ops = read.ops();
    Map<String, String> settings = read.environment();
    LogSetup.apply(config.logLevel(), read.logFormat());
    int[] status = {0};
    WeirNode node = start(read.builder(), err, status);
    if (node == null) {
      return status[0];
    }
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  LOG.info("Weir node stopping");
                  node.close();
                  LOG.info("Weir node stopped");
                },
                "weir-shutdown"));
    LOG.info(
        "Weir node started: {} status_address={} grpc_port={} http_port={} status_port={}"
            + " peer_port={} peers={} handoff={} settings: {}",
        config.describe(),
        ops.statusAddress().map(Object::toString).orElse("off"),
        node.grpcPort(),
        node.httpPort(),
        node.statusPort().isPresent() ? node.statusPort().getAsInt() : "off",
        node.peerPort().isPresent() ? node.peerPort().getAsInt() : "off",
        node.cluster().membership().ring().peers(),
        cluster.handoff(),
        EffectiveSettings.describe(settings));
    node.awaitTermination();
    return 0;
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
   * Returns the environment, with the {@code --config} file's values under it when one is given.
   */
  static Map<String, String> environment(List<String> args, Map<String, String> env) {
    Path file = null;
    for (int i = 0; i < args.size(); i++) {
      String arg = args.get(i);
      if (arg.equals("--config") && i + 1 < args.size()) {
        file = Path.of(args.get(++i));
      } else if (arg.startsWith("--config=")) {
        file = Path.of(arg.substring("--config=".length()));
      } else {
        throw new ConfigException(
            "argument '"
                + arg
                + "' is not valid: expected --config FILE or a subcommand of "
                + Main.COMMANDS.keySet());
      }
    }
    return file == null ? env : EnvFile.mergeUnder(EnvFile.read(file), env);
  }
}
