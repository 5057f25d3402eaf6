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
import dev.weir.envoy.rlqs.RlqsSettings;
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

  @Override
  public int run(List<String> args, Map<String, String> env, PrintStream out, PrintStream err)
      throws InterruptedException {
    WeirConfig config;
    EnvoySettings envoy;
    RlqsSettings rlqs;
    LogSetup.Format logFormat;
    OpsSettings ops;
    Map<String, String> settings;
    ClusterSettings cluster;
    DiscoverySettings discovery;
    PeerSettings peers;
    try {
      settings = environment(args, env);
      EnvReader reader = new EnvReader(settings);
      config = WeirConfig.from(reader, HostAddressResolver.system());
      envoy = EnvoySettings.from(reader);
      rlqs = RlqsSettings.from(reader);
      cluster = ClusterSettings.from(reader, DISCOVERY_TYPES);
      discovery = DiscoverySettings.fromEnv(settings, config.advertiseAddress().toString());
      logFormat = LogSetup.format(reader);
      ops = OpsSettings.from(reader);
      peers = PeerSettings.from(reader, config.grpcAddress());
      boolean mayHavePeers = mayHavePeers(discovery, cluster, config);
      ops.checkPortsDistinct(
          config, mayHavePeers ? Optional.of(peers.address()) : Optional.empty());
      peers.checkAuthenticated(ops.tls().enabled(), mayHavePeers);
    } catch (ConfigException e) {
      err.println(e.getMessage());
      return EXIT_CONFIG;
    }
    LogSetup.apply(config.logLevel(), logFormat);
    WeirNode node;
    try {
      node =
          WeirNode.builder(config)
              .cluster(cluster)
              .discovery(discovery)
              .envoy(envoy)
              .rlqs(rlqs)
              .ops(ops)
              .peers(peers)
              .start();
    } catch (dev.weir.envoy.config.ConfigException e) {
      e.errors().forEach(err::println);
      return EXIT_CONFIG;
    } catch (BindException e) {
      err.println(e.getMessage());
      return EXIT_START_FAILED;
    } catch (IOException e) {
      err.println("cannot start: " + e);
      return EXIT_START_FAILED;
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
