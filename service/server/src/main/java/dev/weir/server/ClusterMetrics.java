package dev.weir.server;

import dev.weir.core.cluster.ClusterNode;
import dev.weir.core.cluster.peer.PeerClient;
import dev.weir.core.cluster.peer.PeerLiveness;
import dev.weir.core.metrics.WeirMetrics;
import java.util.HashSet;
import java.util.Set;
import java.util.function.ToLongFunction;

/**
 * Reports a cluster member's state through {@link WeirMetrics}: the peer count, GLOBAL queue
 * lengths and send/broadcast durations, hand-off totals, ring changes, and per peer the forwarding
 * batches and items sent, whether it answers and how often it was found down. Values are read from
 * the member's own counters when scraped; a peer's meters are added when it becomes a member and
 * removed when it no longer is.
 */
final class ClusterMetrics {

  private ClusterMetrics() {}

  /** Starts reporting {@code cluster} to {@code metrics}. */
  static void watch(ClusterNode cluster, WeirMetrics metrics) {
    metrics.watchPeerCount(() -> cluster.membership().ring().peers().size());
    cluster.global().reportTo(metrics);
    cluster.peers().reportTo(metrics);
    cluster.service().reportTo(metrics);
    metrics.watchHandOff(
        () -> cluster.handOff().sentCount(), () -> cluster.handOff().receivedCount());
    cluster.membership().addListener((before, after) -> metrics.ringChanged());
    PeerSeries series = new PeerSeries(cluster, metrics);
    cluster.membership().addMembersListener(series::sync);
    series.sync();
    cluster
        .liveness()
        .addListener(
            new PeerLiveness.Listener() {
              @Override
              public void peerDown(String peer, String reason) {
                metrics.peerDown(peer);
              }
            });
  }

  /**
   * The peers whose meters are reported: the members other than this node, synced with the
   * membership after each change of its members (a peer dropped by discovery while off the ring
   * changes no ring).
   */
  private static final class PeerSeries {
    private final ClusterNode cluster;
    private final WeirMetrics metrics;
    private final Set<String> watched = new HashSet<>();

    PeerSeries(ClusterNode cluster, WeirMetrics metrics) {
      this.cluster = cluster;
      this.metrics = metrics;
    }

    /** Forgets the peers no longer members and watches the new ones. */
    synchronized void sync() {
      Set<String> members = cluster.membership().members();
      watched.removeIf(
          peer -> {
            if (members.contains(peer)) {
              return false;
            }
            metrics.forgetPeer(peer);
            return true;
          });
      for (String peer : members) {
        if (!peer.equals(cluster.self()) && watched.add(peer)) {
          metrics.watchPeerBatches(
              peer,
              () -> sum(cluster, peer, PeerClient::batchesSent),
              () -> sum(cluster, peer, PeerClient::itemsSent));
          metrics.watchPeerUp(peer, () -> !cluster.liveness().isDown(peer));
        }
      }
    }
  }

  private static long sum(ClusterNode cluster, String peer, ToLongFunction<PeerClient> counter) {
    long total = 0;
    for (PeerClient client : cluster.peers().clients()) {
      if (client.address().equals(peer)) {
        total += counter.applyAsLong(client);
      }
    }
    return total;
  }
}
