package dev.weir.server;

import dev.weir.core.cluster.ClusterNode;
import dev.weir.core.cluster.peer.PeerClient;
import dev.weir.core.cluster.peer.PeerLiveness;
import dev.weir.core.metrics.WeirMetrics;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
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
    Set<String> watched = ConcurrentHashMap.newKeySet();
    cluster
        .membership()
        .addListener(
            (before, after) -> {
              Set<String> members = Set.copyOf(cluster.membership().members());
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
            });
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
