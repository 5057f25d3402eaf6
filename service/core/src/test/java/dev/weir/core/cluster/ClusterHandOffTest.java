package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerFailureMode;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.testkit.LocalCluster.Node;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class ClusterHandOffTest {

  private static final int KEYS = 60;

  private LocalCluster cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  // Random keys: FNV-1a places keys that differ only in their last characters close together.
  private static final List<String> KEY_NAMES =
      new java.util.Random(11).longs(KEYS).mapToObj(Long::toHexString).toList();

  private static RateLimitRequest req(int i, long hits) {
    return RateLimitRequest.builder("h", KEY_NAMES.get(i)).hits(hits).limit(10).duration(600_000).build();
  }

  /** Takes 3 hits on each key through node 0; every key then has 7 remaining. */
  private void consumeThree() {
    Node asked = cluster.node(0);
    for (int i = 0; i < KEYS; i++) {
      asked.check(req(i, 3));
    }
  }

  private List<Long> remainingEverywhere(Node asked) {
    List<Long> out = new ArrayList<>();
    for (int i = 0; i < KEYS; i++) {
      out.add(asked.check(req(i, 0)).get(0).remaining());
    }
    return out;
  }

  private void awaitHandOffs() {
    cluster.nodes().forEach(n -> n.cluster().handOff().pending().join());
  }

  @Test
  void addNode_handOffOn_countsSurviveOnNewOwner() {
    cluster = LocalCluster.start(2, ClusterForwardingTest.SETTINGS);
    consumeThree();

    Node joined = cluster.addNode();
    awaitHandOffs();

    assertThat(joined.cluster().handOff().receivedCount()).isPositive();
    assertThat(remainingEverywhere(cluster.node(0))).containsOnly(7L);
    assertThat(remainingEverywhere(joined)).containsOnly(7L);
  }

  @Test
  void addNode_theOldOwnerKeepsWhatItHanded_itsOwnerSideAnswersFromItNotAFullBucket() {
    cluster = LocalCluster.start(2, ClusterForwardingTest.SETTINGS);
    consumeThree();
    List<Node> before = new ArrayList<>();
    for (int i = 0; i < KEYS; i++) {
      before.add(cluster.ownerOf(req(i, 0).hashKey()));
    }

    Node joined = cluster.addNode();
    awaitHandOffs();
    int moved = -1;
    for (int i = 0; i < KEYS && moved < 0; i++) {
      if (cluster.ownerOf(req(i, 0).hashKey()) == joined) {
        moved = i;
      }
    }
    assertThat(moved).as("a key that moved to the new node").isNotNegative();
    // What the old owner answers as owner (an item handed on to it, a key that comes back) starts
    // from what it handed; a stale peer's forwards are handed on (ClusterHandOnTest).
    RateLimitResponse atOldOwner =
        before.get(moved).cluster().decideAsOwner(List.of(req(moved, 1))).get(0);

    assertThat(atOldOwner.remaining()).as("7 left when handed, 1 taken").isEqualTo(6);
  }

  @Test
  void addNode_handOffOff_movedKeysStartOver() {
    cluster = LocalCluster.start(2, ClusterForwardingTest.SETTINGS.withHandoff(false));
    consumeThree();

    Node joined = cluster.addNode();

    assertThat(joined.cluster().handOff().receivedCount()).isZero();
    assertThat(remainingEverywhere(cluster.node(0))).contains(10L, 7L);
  }

  @Test
  void removeNode_gracefulLeave_countsSurviveOnNextOwners() {
    cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS);
    consumeThree();
    Node leaving = cluster.node(2);

    cluster.removeNode(leaving);
    awaitHandOffs();

    assertThat(leaving.cluster().handOff().sentCount()).isPositive();
    assertThat(remainingEverywhere(cluster.node(0))).containsOnly(7L);
  }

  @Test
  void restart_shutdownThenRejoinUnderStaticDiscovery_countsSurviveAndComeBack() {
    restartCountsSurviveAndComeBack(ClusterForwardingTest.SETTINGS);
  }

  @Test
  void restart_failModeLeaverIsDownUntilItReturns_countsStillCopiedBeforeTheReturn() {
    restartCountsSurviveAndComeBack(
        ClusterForwardingTest.SETTINGS.withPeerFailureMode(PeerFailureMode.FAIL));
  }

  private void restartCountsSurviveAndComeBack(ClusterSettings settings) {
    cluster = LocalCluster.start(3, settings);
    consumeThree();
    Node old = cluster.node(1);
    int ownedBefore = 0;
    for (int i = 0; i < KEYS; i++) {
      if (cluster.ownerOf(req(i, 0).hashKey()) == old) {
        ownedBefore++;
      }
    }
    assertThat(ownedBefore).isPositive();

    Node fresh = cluster.restart(old);
    awaitHandOffs();

    assertThat(fresh.address()).isEqualTo(old.address());
    assertThat(fresh.cluster().handOff().receivedCount())
        .as("each copied before the return notice, then handed over")
        .isEqualTo(2 * ownedBefore);
    assertThat(remainingEverywhere(cluster.node(0))).containsOnly(7L);
    assertThat(remainingEverywhere(fresh)).containsOnly(7L);
  }

  @Test
  void restart_failModeLeaverStillDownWhenItsMarkExpires_staysOffTheRingAndGetsItsCountsBack() {
    FakeClock clock = new FakeClock();
    FakeScheduler timers = new FakeScheduler(clock);
    ClusterSettings settings =
        ClusterForwardingTest.SETTINGS.withPeerFailureMode(PeerFailureMode.FAIL);
    cluster = LocalCluster.startInFakeTime(3, settings, clock, timers);
    consumeThree();
    Node leaver = cluster.node(1);
    Node peer = cluster.node(0);
    int ownedBefore = 0;
    for (int i = 0; i < KEYS; i++) {
      if (cluster.ownerOf(req(i, 0).hashKey()) == leaver) {
        ownedBefore++;
      }
    }
    assertThat(ownedBefore).isPositive();

    cluster.stop(leaver);
    awaitHandOffs();
    timers.advance(settings.batchTimeout());
    timers.advance(ClusterNode.DEPARTED_TTL);

    assertThat(peer.cluster().liveness().isDown(leaver.address())).isTrue();
    assertThat(peer.cluster().membership().ring().contains(leaver.address()))
        .as("a leaver still down when its departure mark expires stays off the ring")
        .isFalse();
    assertThat(remainingEverywhere(peer)).as("its keys answered by their next owners").containsOnly(7L);

    Node fresh = cluster.startAgain(leaver);
    awaitHandOffs();

    assertThat(peer.cluster().membership().ring().contains(fresh.address())).isTrue();
    assertThat(fresh.cluster().handOff().receivedCount())
        .as("each copied before the return notice, then handed over")
        .isEqualTo(2 * ownedBefore);
    assertThat(remainingEverywhere(peer)).containsOnly(7L);
    assertThat(remainingEverywhere(fresh)).containsOnly(7L);
  }

  @Test
  void restart_rerouteLeaverVouchedAcrossACutStillDownWhenItsMarkExpires_staysOffTheRingUnreached()
      throws Exception {
    FakeClock clock = new FakeClock();
    FakeScheduler timers = new FakeScheduler(clock);
    ClusterSettings settings = ClusterForwardingTest.SETTINGS;
    cluster = LocalCluster.startInFakeTime(3, settings, clock, timers);
    Node peer = cluster.node(0);
    Node leaver = cluster.node(1);
    Node third = cluster.node(2);
    cluster.cutOneWay(peer, leaver);
    int ownedByLeaver = -1;
    for (int i = 0; i < KEYS && ownedByLeaver < 0; i++) {
      if (cluster.ownerOf(req(i, 0).hashKey()) == leaver) {
        ownedByLeaver = i;
      }
    }
    assertThat(peer.check(req(ownedByLeaver, 1)).get(0).error()).isEmpty();
    Await.until(
        Duration.ofSeconds(5),
        () -> third.address().equals(peer.cluster().probes().voucher(leaver.address())),
        "the third node vouches for the leaver at the peer");

    cluster.stop(leaver);
    awaitHandOffs();
    timers.advance(settings.batchTimeout());
    timers.advance(ClusterNode.DEPARTED_TTL);

    assertThat(peer.cluster().membership().ring().contains(leaver.address()))
        .as("a vouched leaver still down when its departure mark expires stays off the ring")
        .isFalse();
    assertThat(peer.cluster().probes().unreached()).contains(leaver.address());
    assertThat(peer.cluster().liveness().downReason(leaver.address()))
        .isEqualTo(dev.weir.core.cluster.peer.PeerLiveness.LEFT);
  }

  @Test
  void restart_returnNoticeMissedOnce_retriedUntilPeerPutsNodeBackOnRing() throws Exception {
    ClusterSettings fast =
        new ClusterSettings(
            512, ClusterSettings.defaults().hash(), 1000, Duration.ofNanos(500_000),
            Duration.ofMillis(250), false, Duration.ofMillis(100), 1000, Duration.ofSeconds(5),
            "static", List.of(), true);
    cluster = LocalCluster.start(3, fast);
    consumeThree();
    Node peer = cluster.node(0);
    AtomicInteger refused = new AtomicInteger();
    peer.beforeAnnounce(
        leaving -> {
          if (!leaving && refused.incrementAndGet() == 1) {
            throw new IllegalStateException("return notice lost");
          }
        });

    Node fresh = cluster.restart(cluster.node(1));

    Await.holdsWithin(Duration.ofSeconds(20), () -> peer.returnNoticesHandled() > 0);
    assertThat(refused.get()).as("the first return notice was refused").isGreaterThanOrEqualTo(1);
    assertThat(peer.returnNoticesHandled()).as("a later return notice was handled").isEqualTo(1);
    assertThat(peer.cluster().membership().ring().contains(fresh.address())).isTrue();
    assertThat(remainingEverywhere(peer)).containsOnly(7L);
    assertThat(remainingEverywhere(fresh)).containsOnly(7L);
  }

  @Test
  void removeNode_hitsRecordedAfterSnapshot_resentAndCountedByNextOwner() {
    cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS);
    consumeThree();
    Node leaving = cluster.node(2);
    List<Integer> ownedKeys = new ArrayList<>();
    for (int i = 0; i < KEYS; i++) {
      if (cluster.ownerOf(req(i, 0).hashKey()) == leaving) {
        ownedKeys.add(i);
      }
    }
    assertThat(ownedKeys).isNotEmpty();
    AtomicInteger late = new AtomicInteger();
    Runnable lateHits =
        () -> {
          if (late.getAndIncrement() == 0) {
            ownedKeys.forEach(i -> leaving.cluster().decideAsOwner(List.of(req(i, 2))));
          }
        };
    cluster.nodes().forEach(n -> n.beforeAcceptBuckets(lateHits));

    cluster.removeNode(leaving);
    awaitHandOffs();

    List<Long> remaining = remainingEverywhere(cluster.node(0));
    for (int i = 0; i < KEYS; i++) {
      assertThat(remaining.get(i))
          .as("key %d", i)
          .isEqualTo(ownedKeys.contains(i) ? 5L : 7L);
    }
  }

  @Test
  void leave_thenRequestsAtOthers_forwardedToNextOwnerNotToLeaver() {
    cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS);
    consumeThree();
    Node leaving = cluster.node(2);
    leaving.cluster().leave(Duration.ofSeconds(5));
    leaving.server().shutdownNow();
    awaitHandOffs();

    assertThat(cluster.node(0).cluster().membership().ring().contains(leaving.address())).isFalse();
    assertThat(remainingEverywhere(cluster.node(0)))
        .as("no item errors and no lost counts while static discovery still lists the leaver")
        .containsOnly(7L);
  }
}
