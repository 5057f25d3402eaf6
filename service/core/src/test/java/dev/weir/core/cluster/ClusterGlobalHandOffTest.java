package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerFailureMode;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.testkit.LocalCluster.Node;
import dev.weir.ring.HashRing;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** GLOBAL keys whose owner changes: every hit counts once at the new owner. */
class ClusterGlobalHandOffTest {

  private static final long LIMIT = 10;

  // GLOBAL sync timers far away (the tests flush explicitly); hand-off on.
  private static final ClusterSettings SETTINGS = ClusterGlobalTest.SETTINGS;

  private LocalCluster cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  /**
   * Asserts that {@code node} answers a GLOBAL check of {@code key} with {@code admitted} of the
   * limit taken, by the {@code hits} described.
   */
  private static void assertAdmitted(Node node, String key, String hits, long admitted) {
    assertThat(node.check(global(key, 0)).get(0).remaining())
        .as(hits + " hits admitted")
        .isEqualTo(LIMIT - admitted);
  }

  private static RateLimitRequest global(String key, long hits) {
    return RateLimitRequest.builder("g", key).hits(hits).limit(LIMIT).duration(600_000)
        .behavior(Behavior.GLOBAL).build();
  }

  private Node nextOwner(String key, Node leaving) {
    HashRing without = leaving.cluster().membership().ring().without(leaving.address());
    String address = without.ownerOf("g_" + key);
    return cluster.nodes().stream()
        .filter(n -> n.address().equals(address))
        .findFirst()
        .orElseThrow();
  }

  /**
   * The leaver, off its own ring, answers a GLOBAL hit as a non-owner while its transfer is in
   * flight.
   */
  @Test
  void leave_globalHitAtOldOwnerDuringTransfer_countedOnceAtNewOwner() {
    cluster = LocalCluster.start(3, SETTINGS);
    Node leaving = cluster.node(2);
    String key = cluster.keyOwnedBy(leaving, "g", "k");
    leaving.check(global(key, 3));
    Node next = nextOwner(key, leaving);
    AtomicInteger accepts = new AtomicInteger();
    next.beforeAcceptBuckets(
        () -> {
          if (accepts.incrementAndGet() == 2) { // 1: copy before leaving; 2: transfer after
            leaving.check(global(key, 2)); // non-owner GLOBAL path: local copy + queued hits
          }
        });

    cluster.removeNode(leaving);

    assertThat(accepts.get()).isGreaterThanOrEqualTo(2);
    assertAdmitted(next, key, "3 + 2", 5);
    assertThat(leaving.cluster().handOff().keysInTransfer()).as("no watch left").isZero();
  }

  /**
   * A node restarts; the node that held its keys hands them back. The returning owner takes GLOBAL
   * hits and broadcasts while that transfer is in flight; the broadcast overwrites the holder's
   * copy, which hand-off then takes for hits the holder recorded and sends back.
   */
  @Test
  void restart_returningOwnersBroadcastReachesHolderDuringTransfer_ownersHitsCountedOnce() {
    cluster = LocalCluster.start(3, SETTINGS);
    Node restarted = cluster.node(1);
    String key = cluster.keyOwnedBy(restarted, "g", "k");
    restarted.check(global(key, 3));
    Node holder = nextOwner(key, restarted);
    AtomicInteger accepts = new AtomicInteger();
    holder.beforeAnnounce(
        leaving -> {
          Node fresh = cluster.joining();
          if (!leaving && fresh != null) {
            fresh.beforeAcceptBuckets(
                () -> {
                  if (accepts.incrementAndGet() == 1) { // the hand-back after the return notice
                    fresh.check(global(key, 2)); // fresh owns the key on its ring
                    fresh.cluster().global().flushBroadcasts().join();
                  }
                });
          }
        });

    Node fresh = cluster.restart(restarted);
    holder.cluster().handOff().pending().join();

    assertThat(accepts.get()).isGreaterThanOrEqualTo(1);
    assertAdmitted(fresh, key, "3 + 2", 5);
    assertThat(holder.cluster().handOff().keysInTransfer()).as("no watch left").isZero();
  }

  /**
   * Between the leaver's copy and its notice both sides take GLOBAL hits: the next owner from its
   * copy (queued for the leaver), the leaver as the owner; the transfer after the notice adds the
   * leaver's since the copy to the next owner's.
   */
  @Test
  void leave_hitsOnBothSidesBetweenCopyAndNotice_allCount() {
    cluster = LocalCluster.start(3, SETTINGS);
    Node leaving = cluster.node(2);
    String key = cluster.keyOwnedBy(leaving, "g", "k");
    leaving.check(global(key, 3));
    Node next = nextOwner(key, leaving);
    AtomicBoolean done = new AtomicBoolean();
    next.beforeAnnounce(
        isLeaving -> {
          if (isLeaving && done.compareAndSet(false, true)) { // after the copy, before the notice
            next.check(global(key, 2)); // from next's copy, queued for the leaver
            leaving.check(global(key, 1)); // the leaver still owns the key on its ring
          }
        });

    cluster.removeNode(leaving);
    next.cluster().global().flush().join();

    assertThat(done).isTrue();
    assertAdmitted(next, key, "3 + 2 + 1", 6);
    assertThat(leaving.cluster().handOff().keysInTransfer()).isZero();
  }

  /** A non-owner with queued GLOBAL hits becomes the owner when the old owner leaves. */
  @Test
  void leave_nextOwnerHadQueuedGlobalHits_theyStillCount() {
    cluster = LocalCluster.start(3, SETTINGS);
    Node leaving = cluster.node(2);
    String key = cluster.keyOwnedBy(leaving, "g", "k");
    Node next = nextOwner(key, leaving);
    leaving.check(global(key, 3));
    leaving.cluster().global().flushBroadcasts().join();
    next.check(global(key, 2)); // answered from next's copy, queued for the leaver
    leaving.check(global(key, 1));

    cluster.removeNode(leaving);
    next.cluster().global().flush().join();

    assertAdmitted(next, key, "3 + 2 + 1", 6);
  }

  /**
   * The leaver copies its bucket to the next owner, then (still the owner) takes GLOBAL hits and
   * broadcasts them before its leave notice; the transfer after the notice adds those hits again.
   */
  @Test
  void leave_oldOwnersBroadcastBetweenCopyAndTransfer_itsHitsCountedOnce() {
    cluster = LocalCluster.start(3, SETTINGS);
    Node leaving = cluster.node(2);
    String key = cluster.keyOwnedBy(leaving, "g", "k");
    leaving.check(global(key, 3));
    Node next = nextOwner(key, leaving);
    AtomicBoolean done = new AtomicBoolean();
    next.beforeAnnounce(
        isLeaving -> {
          if (isLeaving && done.compareAndSet(false, true)) { // after the copy, before the notice
            leaving.check(global(key, 2)); // the leaver still owns the key on its ring
            leaving.cluster().global().flushBroadcasts().join();
          }
        });

    cluster.removeNode(leaving);

    assertThat(done).isTrue();
    assertAdmitted(next, key, "3 + 2", 5);
  }

  /**
   * The leaver has left its own ring while the next owner's ring still names it: the next owner's
   * GLOBAL hits, answered from its copy and sent to the leaver, come back to it handed on, and its
   * copy (its bucket once its ring drops the leaver) already holds them.
   */
  @Test
  void leaveNoticeLate_theNextOwnersHitsHandedBackToIt_notAppliedAgain() {
    cluster = LocalCluster.start(3, SETTINGS);
    Node leaving = cluster.node(2);
    String key = cluster.keyOwnedBy(leaving, "g", "k");
    Node next = nextOwner(key, leaving);
    leaving.check(global(key, 3));
    leaving.cluster().global().flushBroadcasts().join();
    leaveUnnoticedBy(leaving, next, key);

    next.check(global(key, 2)); // from next's copy, queued for the leaver
    next.cluster().global().flushHits().join(); // the leaver hands them on to next

    assertAdmitted(next, key, "3 + 2", 5);
    assertThat(next.cluster().global().droppedHits()).isZero();
  }
  /**
   * As above, but the leaver's hand-on to the next owner is refused (it finds the next owner down),
   * so it queues the hits for the key's owner on its ring, the next owner, which has meanwhile
   * taken the leaver off its ring: they are not sent back to the node whose copy holds them.
   */
  @Test
  void leaveNoticeLate_theNextOwnersHitsRequeuedForItAfterAFailedHandOn_notAppliedAgain() {
    cluster = LocalCluster.start(3, SETTINGS.withPeerFailureMode(PeerFailureMode.FAIL));
    Node leaving = cluster.node(2);
    String key = cluster.keyOwnedBy(leaving, "g", "k");
    Node next = nextOwner(key, leaving);
    leaving.check(global(key, 3));
    leaving.cluster().global().flushBroadcasts().join();
    leaveUnnoticedBy(leaving, next, key);
    leaving.cluster().liveness().unreachable(next.address(), "paused");

    next.check(global(key, 2)); // from next's copy, queued for the leaver
    next.cluster().global().flushHits().join(); // the leaver's hand-on to next is refused
    leaving.cluster().liveness().back(next.address());
    next.cluster().membership().departed(leaving.address());
    leaving.cluster().global().flushHits().join();

    assertAdmitted(next, key, "3 + 2", 5);
    assertThat(leaving.cluster().global().queuedHits()).isZero();
    assertThat(leaving.cluster().global().droppedHits()).isZero();
  }

  /**
   * Takes {@code leaving} off its own ring, as its leave does, while {@code next}, the next owner
   * of {@code key}, has not heard of it: {@code next}'s ring still gives {@code key} to {@code
   * leaving}; returns once {@code leaving} has handed its buckets over.
   */
  private static void leaveUnnoticedBy(Node leaving, Node next, String key) {
    leaving.cluster().membership().departed(leaving.address());
    leaving.cluster().handOff().pending().join();
    assertThat(leaving.cluster().membership().ring().ownerOf("g_" + key))
        .isEqualTo(next.address());
    assertThat(next.cluster().membership().ring().ownerOf("g_" + key))
        .isEqualTo(leaving.address());
  }
}
