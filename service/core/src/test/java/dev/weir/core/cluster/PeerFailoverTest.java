package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerFailureMode;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.health.HealthStatus;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FreePorts;
import dev.weir.core.testkit.LocalCluster.Node;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.testkit.RingKeys;
import dev.weir.ring.HashRing;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A peer that dies, returns, never starts or leaves, seen from the nodes that keep answering: its
 * keys go to their next owner (or fail at once in the {@code fail} mode), Gubernator's health
 * reports it without failing readiness, and it is back on the ring within a probe or two.
 */
class PeerFailoverTest {

  private static final Duration DETECTED = Duration.ofSeconds(5);

  private LocalCluster cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static RateLimitRequest req(String key) {
    return RateLimitRequest.builder("test", key).hits(1).limit(5).duration(60_000).build();
  }

  private static boolean isDownAt(Node at, Node peer) {
    return at.cluster().liveness().isDown(peer.address());
  }

  @Test
  void check_ownerKilled_answeredByNextOwnerWithoutError() {
    cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS);
    Node asked = cluster.node(0);
    Node down = cluster.node(1);
    String lostKey = cluster.keyOwnedBy(down, "test", "lost:");
    String localKey = cluster.keyOwnedBy(asked, "test", "here:");
    cluster.kill(down);

    List<RateLimitResponse> answers = asked.check(req(lostKey), req(localKey));

    assertThat(answers.get(0).error()).isEmpty();
    assertThat(answers.get(0).remaining()).isEqualTo(4);
    assertThat(answers.get(0).metadata().get("owner")).isNotEqualTo(down.address());
    assertThat(answers.get(1).error()).isEmpty();
    assertThat(isDownAt(asked, down)).isTrue();
    assertThat(asked.cluster().membership().ring().contains(down.address())).isFalse();
  }

  @Test
  void health_peerKilledWithoutTraffic_healthCheckNamesItAndNodeStaysReady() throws Exception {
    cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS);
    Node asked = cluster.node(0);
    Node down = cluster.node(1);
    asked.check(req(cluster.keyOwnedBy(down, "test", "warm:")));

    cluster.kill(down);

    Await.until(DETECTED, () -> isDownAt(asked, down), "the dropped connection is noticed");
    HealthStatus health = asked.cluster().nodeHealth().health();
    assertThat(health.healthy()).isFalse();
    assertThat(health.message()).contains("peer '" + down.address() + "' is down");
    assertThat(health.peerCount()).isEqualTo(3);
    assertThat(asked.cluster().health().ready()).isTrue();
  }

  @Test
  void revive_downPeerAnswersAgain_backOnRingAndHealthyWithinAFewProbes() throws Exception {
    cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS);
    Node asked = cluster.node(0);
    Node down = cluster.node(1);
    String lostKey = cluster.keyOwnedBy(down, "test", "lost:");
    cluster.kill(down);
    assertThat(asked.check(req(lostKey)).get(0).error()).as("counted by the next owner").isEmpty();
    // Found down is not yet off the ring: each survivor first asks the other whether it reaches
    // the owner. A survivor whose verdict is still out when the owner returns learns from the
    // other that it is reached, keeps it on its ring throughout, and hands back nothing it
    // counted meanwhile.
    for (Node survivor : List.of(asked, cluster.node(2))) {
      Await.until(
          DETECTED,
          () -> !survivor.cluster().membership().ring().contains(down.address()),
          "the owner is off the ring of " + survivor.address());
    }

    cluster.revive(down);

    for (Node survivor : List.of(asked, cluster.node(2))) {
      Await.until(
          Duration.ofSeconds(3),
          () -> survivor.cluster().membership().ring().contains(down.address()),
          "the revived peer is back on the ring of " + survivor.address());
    }
    // The ring is swapped before its listeners (the hand-off among them) hear of the change. The
    // transfer waits for this node's own connection to the revived owner, which may still be in
    // gRPC's reconnect back-off (seconds) when a probe has put the owner back on the ring.
    Await.until(
        Duration.ofSeconds(10),
        () -> down.store().get("test_" + lostKey).isPresent(),
        "the bucket handed back to the revived owner");
    RateLimitResponse back = asked.check(req(lostKey)).get(0);
    assertThat(back.error()).isEmpty();
    assertThat(back.metadata()).containsEntry("owner", down.address());
    assertThat(back.remaining()).as("the count taken meanwhile was handed back").isEqualTo(3);
    assertThat(asked.cluster().nodeHealth().health().healthy()).isTrue();
  }

  @Test
  void revive_beforeTheNextOwnerTookItOffItsRing_countsItTookAsFallbackHandedBack()
      throws Exception {
    cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS);
    Node asked = cluster.node(0);
    Node down = cluster.node(1);
    Node next = cluster.node(2);
    String key = keyMovingTo(next, down);
    asked.check(req(key));
    // next asks asked whether it reaches the owner; holding that probe keeps next's verdict out,
    // so next keeps the owner on its ring while asked, which next answers, takes it off its own.
    CompletableFuture<Void> verdictOfNext = new CompletableFuture<>();
    asked.holdProbeRelaysUntil(verdictOfNext);
    List<HashRing> ringsOfNext = new CopyOnWriteArrayList<>();
    next.cluster().membership().addListener((before, after) -> ringsOfNext.add(after));
    cluster.kill(down);
    Await.until(
        DETECTED,
        () -> !asked.cluster().membership().ring().contains(down.address()),
        "the owner is off the ring of " + asked.address());
    Await.until(DETECTED, () -> isDownAt(next, down), "the owner is found down by the next owner");

    for (int i = 0; i < 3; i++) {
      RateLimitResponse meanwhile = asked.check(req(key)).get(0);
      assertThat(meanwhile.error()).isEmpty();
      assertThat(meanwhile.metadata()).containsEntry("owner", next.address());
    }
    cluster.revive(down);
    Await.until(
        Duration.ofSeconds(3),
        () -> !isDownAt(next, down) && asked.cluster().membership().ring().contains(down.address()),
        "the revived owner answers the next owner and is back on the ring of " + asked.address());
    assertThat(ringsOfNext)
        .as("the next owner never took the owner off its ring")
        .allSatisfy(ring -> assertThat(ring.contains(down.address())).isTrue());
    verdictOfNext.complete(null);

    Await.until(
        Duration.ofSeconds(10),
        () -> remainingAt(down, key) == 2,
        "the 3 hits the next owner counted handed back to the revived owner (1 before, 5 allowed)");
    RateLimitResponse back = asked.check(req(key)).get(0);
    assertThat(back.metadata()).containsEntry("owner", down.address());
    assertThat(back.remaining()).isEqualTo(1);
  }

  // A key owner owns, whose next owner is next.
  private String keyMovingTo(Node next, Node owner) {
    HashRing ring = cluster.node(0).cluster().membership().ring();
    HashRing without =
        HashRing.of(
            ring.peers().stream().filter(p -> !p.equals(owner.address())).toList(),
            ClusterForwardingTest.SETTINGS.replicas(),
            ClusterForwardingTest.SETTINGS.hash());
    for (int i = 0; i < 10_000; i++) {
      String key = "fallback:" + i;
      if (ring.ownerOf("test_" + key).equals(owner.address())
          && without.ownerOf("test_" + key).equals(next.address())) {
        return key;
      }
    }
    throw new IllegalStateException(
        "no key moves from " + owner.address() + " to " + next.address());
  }

  private static long remainingAt(Node node, String key) {
    return node.store()
        .get("test_" + key)
        .map(s -> ((TokenBucketState) s).remaining())
        .orElse(-1L);
  }

  @Test
  void check_ownerKilledInFailMode_itemFailsAtOnceNamingThePeer() throws Exception {
    cluster =
        LocalCluster.start(
            3, ClusterForwardingTest.SETTINGS.withPeerFailureMode(PeerFailureMode.FAIL));
    Node asked = cluster.node(0);
    Node down = cluster.node(1);
    String lostKey = cluster.keyOwnedBy(down, "test", "lost:");
    asked.check(req(lostKey));
    cluster.kill(down);
    Await.until(DETECTED, () -> isDownAt(asked, down), "the dropped connection is noticed");

    long start = System.nanoTime();
    RateLimitResponse answer = asked.check(req(lostKey)).get(0);

    assertThat(answer.error())
        .startsWith("not calling peer '" + down.address() + "': it is down")
        .endsWith("and WEIR_PEER_FAILURE_MODE is fail");
    assertThat(Duration.ofNanos(System.nanoTime() - start))
        .as("no wait for the 5 s deadline")
        .isLessThan(Duration.ofSeconds(4));
    assertThat(asked.cluster().membership().ring().contains(down.address())).isTrue();
  }

  @Test
  void check_peerThatNeverStarted_everyItemAnsweredByTheOthers() throws Exception {
    String ghost = "127.0.0.1:" + FreePorts.next();
    cluster = LocalCluster.start(2, ClusterForwardingTest.SETTINGS, List.of(ghost));
    Node asked = cluster.node(0);
    HashRing withGhost =
        HashRing.of(
            List.of(asked.address(), cluster.node(1).address(), ghost),
            ClusterForwardingTest.SETTINGS.replicas(),
            ClusterForwardingTest.SETTINGS.hash());
    // 20 keys the ghost would own while on the ring, 40 the live nodes own.
    List<RateLimitRequest> requests = new ArrayList<>();
    for (String key : RingKeys.split(withGhost, "test", "k", ghost, 20, 40)) {
      requests.add(req(key));
    }

    long start = System.nanoTime();
    List<RateLimitResponse> answers = asked.service().decide(requests).join();

    assertThat(answers).allSatisfy(a -> assertThat(a.error()).isEmpty());
    assertThat(Duration.ofNanos(System.nanoTime() - start))
        .as("no item waits for the 5 s deadline")
        .isLessThan(Duration.ofSeconds(4));
    assertThat(asked.cluster().liveness().isDown(ghost)).isTrue();
    assertThat(asked.cluster().health().ready()).isTrue();
  }

  @Test
  void leave_callsStillArrivingAtTheLeavingNode_forwardedNotRefused() {
    cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS);
    Node leaving = cluster.node(2);
    List<RateLimitRequest> requests = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      requests.add(req("drain" + i));
    }

    leaving.cluster().leave(Duration.ofSeconds(5));
    List<RateLimitResponse> answers = leaving.service().decide(requests).join();

    assertThat(answers).allSatisfy(a -> assertThat(a.error()).isEmpty());
    assertThat(answers)
        .allSatisfy(a -> assertThat(a.metadata().get("owner")).isNotEqualTo(leaving.address()));
  }
}
