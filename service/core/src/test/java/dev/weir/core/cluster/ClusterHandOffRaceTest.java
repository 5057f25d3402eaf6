package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.LocalCluster.Node;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.ring.HashRing;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Requests that reach a key's new owner while its buckets are still on the way: the hooks hold each
 * bucket transfer or return notice and send requests meanwhile, as a steady load would.
 */
class ClusterHandOffRaceTest {

  private static final long LIMIT = 10;

  private LocalCluster cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static RateLimitRequest req(String key, long hits) {
    return RateLimitRequest.builder("race", key).hits(hits).limit(LIMIT).duration(600_000).build();
  }

  /** Returns a key that {@code owner} owns on the current ring. */
  private String keyOwnedBy(Node owner) {
    return cluster.keyOwnedBy(owner, "race", "k");
  }

  /** Returns the node that owns {@code key} once {@code leaving} is off the ring. */
  private Node nextOwner(String key, Node leaving) {
    HashRing without = leaving.cluster().membership().ring().without(leaving.address());
    String address = without.ownerOf(req(key, 0).hashKey());
    return cluster.nodes().stream().filter(n -> n.address().equals(address)).findFirst().orElseThrow();
  }

  private List<Node> othersThan(Node node) {
    return cluster.nodes().stream().filter(n -> n != node).toList();
  }

  @Test
  void leave_requestsWhileBucketsInFlight_exhaustedKeyAdmitsNothing() {
    cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS);
    Node leaving = cluster.node(2);
    String key = keyOwnedBy(leaving);
    cluster.node(0).check(req(key, LIMIT));
    List<Node> staying = othersThan(leaving);
    List<RateLimitResponse> meanwhile = new CopyOnWriteArrayList<>();
    staying.forEach(
        n -> n.beforeAcceptBuckets(() -> staying.forEach(q -> meanwhile.add(q.check(req(key, 1)).get(0)))));

    cluster.removeNode(leaving);

    assertThat(meanwhile).isNotEmpty();
    assertThat(meanwhile).extracting(RateLimitResponse::error).containsOnly("");
    assertThat(meanwhile).extracting(RateLimitResponse::status).containsOnly(Status.OVER_LIMIT);
    assertThat(cluster.node(0).check(req(key, 1)).get(0).status()).isEqualTo(Status.OVER_LIMIT);
  }

  @Test
  void leave_hitsOnBothSidesDuringHandOff_allCounted() {
    cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS);
    Node leaving = cluster.node(2);
    String key = keyOwnedBy(leaving);
    cluster.node(0).check(req(key, 3));
    Node next = nextOwner(key, leaving);
    Node other = othersThan(leaving).stream().filter(n -> n != next).findFirst().orElseThrow();
    AtomicInteger transfers = new AtomicInteger();
    next.beforeAcceptBuckets(
        () -> {
          if (transfers.incrementAndGet() == 1) {
            leaving.cluster().decideAsOwner(List.of(req(key, 2)));
          } else if (transfers.get() == 2) {
            other.check(req(key, 1));
          }
        });

    cluster.removeNode(leaving);

    assertThat(transfers.get()).isGreaterThanOrEqualTo(2);
    assertThat(cluster.node(0).check(req(key, 0)).get(0).remaining())
        .as("3 before, 2 at the leaver after its first snapshot, 1 at the next owner before the last")
        .isEqualTo(LIMIT - 6);
  }

  @Test
  void restart_peerForwardsToReturningNodeBeforeHandBack_exhaustedKeyAdmitsNothing() {
    cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS);
    Node restarted = cluster.node(1);
    String key = keyOwnedBy(restarted);
    cluster.node(0).check(req(key, LIMIT));
    Node holder = nextOwner(key, restarted);
    Node third = othersThan(restarted).stream().filter(n -> n != holder).findFirst().orElseThrow();
    List<RateLimitResponse> meanwhile = new CopyOnWriteArrayList<>();
    holder.beforeAnnounce(
        leaving -> {
          if (!leaving) {
            third.cluster().announce(restarted.address(), false);
            meanwhile.add(third.check(req(key, 1)).get(0));
          }
        });

    Node fresh = cluster.restart(restarted);

    assertThat(meanwhile).hasSize(1);
    assertThat(meanwhile.get(0).error()).isEmpty();
    assertThat(meanwhile.get(0).metadata()).containsEntry("owner", fresh.address());
    assertThat(meanwhile.get(0).status())
        .as("the third peer already forwards to the returning node; the holder has not handed back")
        .isEqualTo(Status.OVER_LIMIT);
    assertThat(fresh.check(req(key, 1)).get(0).status()).isEqualTo(Status.OVER_LIMIT);
  }
}
