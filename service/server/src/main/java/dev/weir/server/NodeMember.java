package dev.weir.server;

import dev.weir.core.Weir;
import dev.weir.core.WeirMember;
import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.peer.PeerListener;
import dev.weir.core.cluster.peer.auth.PeerSettings;
import dev.weir.core.config.HostPort;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.discovery.StaticDiscovery;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.store.BucketStore;
import dev.weir.core.time.Clock;
import dev.weir.metrics.micrometer.MicrometerMetrics;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The steps that build, join and leave a node's {@link WeirMember}, not a member itself: the member
 * is built on the node's started gRPC listener, finds its peers with the configured discovery, is
 * joined once the listeners are ready and left before they stop.
 */
final class NodeMember {

  private static final Logger LOG = LoggerFactory.getLogger(NodeMember.class);
  private static final Duration LEAVE_WAIT = Duration.ofSeconds(5);

  /** How the member is made. */
  record Settings(
      ClusterSettings cluster,
      DiscoverySettings discovery,
      PeerSettings peers,
      BucketStore store,
      InputLimits limits,
      Clock clock) {}

  private NodeMember() {}

  /**
   * Builds the member advertised at {@code advertise} on {@code grpc}'s server, which serves its
   * request path, with the node's TLS identity (when on) for the peer protocol; a peer listener at
   * port 0 is bound now and its port registered by discovery, which runs on {@code
   * discoveryTimers}.
   *
   * @throws DiscoveryFailure when the discovery cannot be created
   * @throws UncheckedIOException naming the peer listener when it cannot be bound
   */
  static WeirMember build(
      Settings settings,
      HostPort advertise,
      ClientGrpcListener grpc,
      NodeTls tls,
      ScheduledExecutorService discoveryTimers,
      MicrometerMetrics metrics) {
    DiscoveryFactory discovery =
        new DiscoveryFactory(
            address -> new StaticDiscovery(address, settings.cluster().staticPeers()),
            discoveryTimers,
            metrics);
    PeerSettings peers = settings.peers();
    Weir.Builder member =
        Weir.builder()
            .advertiseAddress(settings.discovery().advertiseAddress(advertise.toString()))
            .discoveryForPeerPort(port -> discovery(discovery, settings, advertise, port))
            .clusterSettings(settings.cluster())
            .store(settings.store())
            .clock(settings.clock())
            .leaveWait(LEAVE_WAIT)
            .server(grpc.server())
            .peerAddress(peers.address().toString())
            .insecurePeers(peers.insecure())
            .metrics(metrics)
            .inputLimits(settings.limits());
    peers.secret().ifPresent(member::peerSecret);
    if (tls.node().isPresent()) {
      member.peerTls(tls.node().get());
      peers.allowedIdentities().ifPresent(member::peerAllowedIdentities);
      peers.tlsServerName().ifPresent(member::peerTlsServerName);
    }
    try {
      return member.build();
    } catch (UncheckedIOException e) {
      throw new UncheckedIOException(
          BindFailure.of("peer", PeerSettings.ADDRESS, peers.address(), e.getCause()));
    }
  }

  private static PeerDiscovery discovery(
      DiscoveryFactory factory, Settings settings, HostPort advertise, int peerPort) {
    try {
      return factory.create(settings.discovery(), advertise.toString(), peerPort);
    } catch (Exception e) {
      throw new DiscoveryFailure(e);
    }
  }

  /** The peer discovery could not be created. */
  static final class DiscoveryFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    DiscoveryFailure(Exception cause) {
      super("cannot start peer discovery: " + cause.getMessage(), cause);
    }
  }

  /**
   * Opens {@code member}'s peer listener and joins the peers discovery finds; returns {@code
   * member}.
   *
   * @throws IOException naming the peer listener's address when it cannot be bound
   */
  static WeirMember join(WeirMember member, PeerSettings peers) throws IOException {
    try {
      return member.start();
    } catch (PeerListener.StartFailure e) {
      throw BindFailure.isBindFailure(e)
          ? BindFailure.of("peer", PeerSettings.ADDRESS, peers.address(), e)
          : e;
    }
  }

  /** Logs the forwarding counters and leaves the cluster, handing buckets to their next owners. */
  static void leave(WeirMember member) {
    String forwarding = member.cluster().batchStats();
    if (!forwarding.isEmpty()) {
      LOG.info("peer forwarding: {}", forwarding);
    }
    member.leave();
  }
}
