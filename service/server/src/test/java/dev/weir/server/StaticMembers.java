package dev.weir.server;

import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.peer.auth.PeerSecret;
import dev.weir.core.cluster.peer.auth.PeerSettings;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import java.util.List;
import java.util.Optional;

/** Builders of in-process cluster members on loopback, for tests that start several. */
final class StaticMembers {

  private StaticMembers() {}

  /**
   * Returns the builder of a member serving gRPC on {@code grpcPort} and its peer listener on
   * {@code peerPort}, with the static peers {@code peers}, the peer secret {@code secret}, an HTTP
   * listener on a free port and hand-off off; the caller adds a clock, a store and the rest.
   */
  static WeirNode.Builder builder(int grpcPort, int peerPort, List<String> peers, String secret) {
    WeirConfig config = TestConfigs.loopback(grpcPort);
    return WeirNode.builder(config)
        .cluster(ClusterSettings.defaults().withStaticPeers(peers).withHandoff(false))
        .peers(
            new PeerSettings(
                new HostPort("127.0.0.1", peerPort),
                Optional.of(PeerSecret.of(secret)),
                Optional.empty(),
                Optional.empty(),
                false));
  }
}
