package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.testkit.LocalCluster.Node;
import dev.weir.ring.HashRing;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A node told of a membership change answers once its hand-off is done, without a thread waiting. */
class AnnounceHandOffTest {

  private LocalCluster cluster;
  private final CountDownLatch release = new CountDownLatch(1);

  @AfterEach
  void stop() {
    release.countDown();
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void announceReturn_handOffPending_returnsAtOnceAndCompletesWhenTheHandOffDoes()
      throws Exception {
    cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS);
    Node asked = cluster.node(0);
    Node returning = cluster.node(2);
    asked.cluster().announce(returning.address(), true).get(5, TimeUnit.SECONDS);
    java.util.Random random = new java.util.Random(7);
    for (int i = 0; i < 60; i++) {
      asked.check(
          RateLimitRequest.builder("h", Long.toHexString(random.nextLong()))
              .hits(1)
              .limit(10)
              .duration(600_000)
              .build());
    }
    returning.beforeAcceptBuckets(
        () -> {
          try {
            release.await(10, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });

    CompletableFuture<Void> answered = asked.cluster().announce(returning.address(), false);

    assertThat(answered).as("the hand-off to the returning node is still running").isNotDone();
    release.countDown();
    answered.get(5, TimeUnit.SECONDS);
    assertThat(asked.cluster().membership().ring().contains(returning.address())).isTrue();
  }

  /**
   * A joiner the peers' discovery does not list yet (Kubernetes lists a pod once it is ready, after
   * its join) still gets the counts of the keys it will own in its join, and the hand-over when the
   * peers list it adds only the hits taken on the old owner since that copy.
   */
  @Test
  void join_peersDoNotListTheJoinerYet_itStartsFromTheOldOwnersCountsAndTheListingCountsOnce()
      throws Exception {
    cluster = LocalCluster.start(2, ClusterForwardingTest.SETTINGS);
    Node joiner = cluster.startUnlisted();
    Set<String> withJoiner = new TreeSet<>(Set.of(joiner.address()));
    cluster.nodes().forEach(n -> withJoiner.add(n.address()));
    HashRing before = cluster.node(0).cluster().membership().ring();
    HashRing after = before.withPeers(withJoiner);
    String key = null;
    for (int i = 0; key == null; i++) {
      String hashKey = "h_k" + i;
      if (after.ownerOf(hashKey).equals(joiner.address())) {
        key = "k" + i;
      }
    }
    Node oldOwner = cluster.ownerOf("h_" + key);
    RateLimitRequest hit =
        RateLimitRequest.builder("h", key).hits(1).limit(10).duration(600_000).build();
    for (int i = 0; i < 5; i++) {
      oldOwner.check(hit);
    }

    joiner.cluster().join(discoveryOf(withJoiner));
    RateLimitResponse atJoiner = joiner.check(hit).get(0);
    RateLimitResponse atOldOwner = oldOwner.check(hit).get(0);
    cluster.list(joiner);
    cluster.nodes().forEach(n -> n.cluster().handOff().pending().join());
    RateLimitResponse afterListing = joiner.check(hit).get(0);

    assertThat(atJoiner.status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(atJoiner.remaining())
        .as("the joiner answers from the 5 hits its old owner copied to it, plus its own")
        .isEqualTo(4);
    assertThat(atOldOwner.remaining()).as("the old owner still owns the key on its ring").isEqualTo(4);
    assertThat(afterListing.remaining())
        .as("8 hits in all: the copied 5, one on the joiner, one on the old owner, this one")
        .isEqualTo(2);
  }

  /** A discovery that delivers {@code peers} during its start, as Kubernetes discovery does. */
  private static PeerDiscovery discoveryOf(Set<String> peers) {
    return new PeerDiscovery() {
      @Override
      public void start(java.util.function.Consumer<Set<String>> listener) {
        listener.accept(Set.copyOf(peers));
      }

      @Override
      public void close() {}
    };
  }
}
