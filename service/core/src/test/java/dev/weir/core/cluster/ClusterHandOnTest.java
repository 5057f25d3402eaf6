package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerException;
import dev.weir.core.cluster.peer.PeerFailureMode;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.model.Algorithm;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.GregorianInterval;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.LocalCluster.Node;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.ring.HashRing;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Hits a peer forwards to a key's old owner after that owner handed the key over (the peer's ring
 * is behind) are handed on to the new owner, never counted on the copy the old owner kept. Each
 * stale peer is played by a member calling the old owner's peer listener directly, over real gRPC,
 * as its forwarding path does while its ring still names the old owner.
 */
class ClusterHandOnTest {

  private static final long LIMIT = 1_000_000;

  // Random keys: FNV-1a places keys that differ only in their last characters close together.
  private static final List<String> KEYS =
      new Random(11).longs(60).mapToObj(Long::toHexString).toList();

  private LocalCluster cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static RateLimitRequest hit(String key, long hits) {
    return RateLimitRequest.builder("h", key).hits(hits).limit(LIMIT).duration(600_000).build();
  }

  /** Forwards {@code r} from {@code from} to {@code to}, as a peer whose ring names {@code to}. */
  private static CompletableFuture<RateLimitResponse> forward(
      Node from, Node to, RateLimitRequest r) {
    return from.cluster().peers().call(to.address(), c -> c.forward(r));
  }

  private static long remainingAt(Node owner, String key) {
    return owner.cluster().service().decideAsOwner(List.of(hit(key, 0))).get(0).remaining();
  }

  @Test
  void leave_aStalePeerForwardsToTheLeavingOwnerDuringAndAfterItsHandOff_noHitLost()
      throws Exception {
    cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS);
    Node leaving = cluster.node(0);
    Node stale = cluster.node(1);
    String key = cluster.keyOwnedBy(leaving, "h", "k");
    String hashKey = "h_" + key;
    HashRing after = leaving.cluster().membership().ring().without(leaving.address());
    Node next =
        cluster.nodes().stream()
            .filter(n -> n.address().equals(after.ownerOf(hashKey)))
            .findFirst()
            .orElseThrow();
    leaving.check(hit(key, 3));
    AtomicInteger sent = new AtomicInteger(3);
    AtomicInteger failed = new AtomicInteger();
    // Hits while the leave spreads: at each notice (after the copy, before the swap) ...
    cluster.nodes().forEach(
        n ->
            n.beforeAnnounce(
                isLeaving ->
                    count(forward(stale, leaving, hit(key, 2)).join(), null, 2, sent, failed)));
    // ... and all along, from another thread.
    AtomicBoolean sending = new AtomicBoolean(true);
    Thread background =
        new Thread(
            () -> {
              while (sending.get()) {
                forward(stale, leaving, hit(key, 1))
                    .handle(
                        (a, error) -> {
                          count(a, error, 1, sent, failed);
                          return null;
                        })
                    .join();
              }
            });
    background.start();

    leaving.cluster().leave(Duration.ofSeconds(5));
    // Right after its last transfer: the old owner still gets the stale peer's forwards.
    for (int i = 0; i < 20; i++) {
      count(forward(stale, leaving, hit(key, 1)).join(), null, 1, sent, failed);
    }
    sending.set(false);
    background.join();
    leaving.cluster().handOff().pending().join();

    assertThat(failed).hasValue(0);
    assertThat(sent.get()).isGreaterThan(3 + 20);
    assertThat(remainingAt(next, key))
        .as("%d hits sent to the old owner, counted on the next owner", sent.get())
        .isEqualTo(LIMIT - sent.get());
  }

  @Test
  void leave_aForwardInFlightWhenTheLeaveNoticeArrives_countedOnceOnTheNextOwner()
      throws Exception {
    cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS);
    Node leaving = cluster.node(0);
    Node stale = cluster.node(1);
    String key = cluster.keyOwnedBy(leaving, "h", "k");
    Node next = nextOwner(leaving, "h_" + key);
    leaving.check(hit(key, 3));
    CountDownLatch atTheOldOwner = new CountDownLatch(1);
    CountDownLatch noticed = new CountDownLatch(1);
    AtomicBoolean first = new AtomicBoolean(true);
    List<CompletableFuture<RateLimitResponse>> inFlight = new CopyOnWriteArrayList<>();
    // The stale peer's forward reaches the leaving owner and is held there ...
    leaving.beforeAnswerForwarded(
        items -> {
          if (!items.isEmpty() && first.compareAndSet(true, false)) {
            atTheOldOwner.countDown();
            await(noticed);
            if (stale.cluster().liveness().isDown(leaving.address())) {
              // The stale peer gave up on its forward (and routed it again): wait for its answer.
              inFlight.get(0).copy().orTimeout(10, TimeUnit.SECONDS).exceptionally(e -> null).join();
            }
          }
        });
    // ... while the stale peer applies the leave notice; then the old owner counts it.
    stale.beforeAnnounce(
        isLeaving -> {
          if (isLeaving && inFlight.isEmpty()) {
            inFlight.add(CompletableFuture.supplyAsync(() -> stale.check(hit(key, 1)).get(0)));
            await(atTheOldOwner);
            stale.cluster().announce(leaving.address(), true);
            noticed.countDown();
          }
        });

    leaving.cluster().leave(Duration.ofSeconds(5));
    RateLimitResponse answer = inFlight.get(0).get(10, TimeUnit.SECONDS);

    assertThat(answer.error()).isEmpty();
    assertThat(remainingAt(next, key)).as("4 hits, each counted once").isEqualTo(LIMIT - 4);
  }

  private Node nextOwner(Node leaving, String hashKey) {
    HashRing after = leaving.cluster().membership().ring().without(leaving.address());
    return cluster.nodes().stream()
        .filter(n -> n.address().equals(after.ownerOf(hashKey)))
        .findFirst()
        .orElseThrow();
  }

  private static void await(CountDownLatch latch) {
    try {
      assertThat(latch.await(10, TimeUnit.SECONDS)).isTrue();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static void count(
      RateLimitResponse answer,
      Throwable error,
      int hits,
      AtomicInteger sent,
      AtomicInteger failed) {
    if (error != null && neverSent(error)) {
      return;
    }
    if (error != null || !answer.error().isEmpty()) {
      failed.incrementAndGet();
    } else {
      sent.addAndGet(hits);
    }
  }

  /**
   * Returns whether {@code error} is the stale peer's client dropping a forward it had queued, not
   * sent, when its ring dropped the leaving node (the request path routes such an item again).
   */
  private static boolean neverSent(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof PeerException
          && String.valueOf(t.getMessage()).contains("before the forwarded item was sent")) {
        return true;
      }
    }
    return false;
  }

  @Test
  void addNode_aStaleRingForwardsToTheOldOwnerAfterTheHandOff_countedOnTheNewOwner() {
    cluster = LocalCluster.start(2, ClusterForwardingTest.SETTINGS);
    Node old = cluster.node(0);
    Node stale = cluster.node(1);
    String[] moved = new String[1];
    Node joined = joinAndFindMovedKey(old, moved);
    String key = moved[0];

    RateLimitResponse answer = forward(stale, old, hit(key, 1)).join();

    assertThat(remainingAt(joined, key)).isEqualTo(LIMIT - 4);
    assertThat(answer.remaining()).isEqualTo(LIMIT - 4);
    assertThat(answer.metadata()).containsEntry("owner", joined.address());
  }

  @Test
  void addNode_aStalePeerForwardsACalendarWindowInItsTimeZone_theNewOwnerCountsItInThatZone() {
    FakeClock clock = new FakeClock(Instant.parse("2026-01-01T12:00:00Z").toEpochMilli());
    RateLimitEngine engine = new RateLimitEngine(ZoneOffset.UTC);
    cluster =
        LocalCluster.start(
            2,
            ClusterForwardingTest.SETTINGS,
            clock,
            store -> new LocalLimiter(engine, store, clock)::decide);
    Node old = cluster.node(0);
    Node stale = cluster.node(1);
    String[] key = new String[1];
    Node joined = joinAndFindMovedKey(old, key);
    RateLimitRequest daily =
        RateLimitRequest.builder("h", key[0])
            .hits(1)
            .limit(LIMIT)
            .duration(GregorianInterval.DAYS.code())
            .algorithm(Algorithm.FIXED_WINDOW)
            .behavior(Behavior.DURATION_IS_GREGORIAN)
            .metadata(Map.of(GregorianInterval.TIME_ZONE_METADATA, "Pacific/Kiritimati"))
            .build();
    joined.check(daily);

    RateLimitResponse answer = forward(stale, old, daily).join();

    assertThat(answer.error()).isEmpty();
    assertThat(answer.metadata()).containsEntry("owner", joined.address());
    assertThat(answer.remaining()).as("both hits in one Kiritimati day").isEqualTo(LIMIT - 2);
    assertThat(Instant.ofEpochMilli(answer.resetTime()))
        .as("the next midnight in Kiritimati (UTC+14)")
        .isEqualTo(Instant.parse("2026-01-02T10:00:00Z"));
  }

  @Test
  void addNode_aStaleRingChecksAKeyThatMoved_theCallerSeesTheNewOwner() {
    cluster = LocalCluster.start(2, ClusterForwardingTest.SETTINGS);
    Node old = cluster.node(0);
    Node stale = cluster.node(1);
    String[] moved = new String[1];
    Node joined = joinAndFindMovedKey(old, moved);
    stale.cluster().membership().departed(joined.address());
    assertThat(stale.cluster().membership().ring().ownerOf("h_" + moved[0]))
        .isEqualTo(old.address());

    RateLimitResponse answer = stale.check(hit(moved[0], 1)).get(0);

    assertThat(answer.error()).isEmpty();
    assertThat(answer.remaining()).isEqualTo(LIMIT - 4);
    assertThat(answer.metadata()).containsEntry("owner", joined.address());
  }

  /** Returns, after a node joined, one of {@code old}'s keys that moved to it; starts the join. */
  private Node joinAndFindMovedKey(Node old, String[] key) {
    HashRing before = old.cluster().membership().ring();
    KEYS.forEach(k -> old.check(hit(k, 3)));
    Node joined = cluster.addNode();
    cluster.nodes().forEach(n -> n.cluster().handOff().pending().join());
    HashRing now = old.cluster().membership().ring();
    key[0] =
        KEYS.stream()
            .filter(k -> before.ownerOf("h_" + k).equals(old.address()))
            .filter(k -> now.ownerOf("h_" + k).equals(joined.address()))
            .findFirst()
            .orElseThrow();
    return joined;
  }

  @Test
  void addNode_staleGlobalHitsReachTheOldOwner_appliedAndBroadcastByTheNewOwner() {
    cluster = LocalCluster.start(2, ClusterForwardingTest.SETTINGS);
    Node old = cluster.node(0);
    String[] key = new String[1];
    Node joined = joinAndFindMovedKey(old, key);

    forward(cluster.node(1), old, hit(key[0], 5).withBehavior(Behavior.GLOBAL)).join();

    assertThat(remainingAt(joined, key[0])).isEqualTo(LIMIT - 8);
    assertThat(joined.cluster().global().queuedBroadcasts()).isEqualTo(1);
  }

  @Test
  void addNode_handOffOff_theOldOwnerAnswersAsGubernatorDoes() {
    cluster = LocalCluster.start(2, ClusterForwardingTest.SETTINGS.withHandoff(false));
    Node old = cluster.node(0);
    String[] key = new String[1];
    Node joined = joinAndFindMovedKey(old, key);

    RateLimitResponse answer = forward(cluster.node(1), old, hit(key[0], 1)).join();

    assertThat(answer.remaining()).isEqualTo(LIMIT - 4);
    assertThat(joined.store().get("h_" + key[0])).isEmpty();
  }

  /**
   * Takes {@code c} off the ring of {@code a} and {@code b} off its own ring, so that a key may be
   * owned by {@code b} on the ring of {@code a} and by {@code a} on the ring of {@code b}; waits
   * for the changes to be delivered and for the hand-offs they start, since a scan of b's store
   * that ran after a later hit would copy that hit's bucket to {@code a}, its owner on the ring of
   * {@code b}.
   */
  static void makeRingsDisagree(Node a, Node b, Node c) {
    a.cluster().membership().departed(c.address());
    b.cluster().membership().departed(b.address());
    for (Node n : List.of(a, b)) {
      n.cluster().membership().delivered().join();
      n.cluster().handOff().pending().join();
    }
  }

  @Test
  void ringsThatDisagree_anItemIsHandedOnOnceAndAnsweredWhereItArrives() {
    cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS);
    Node a = cluster.node(0);
    Node b = cluster.node(1);
    Node c = cluster.node(2);
    makeRingsDisagree(a, b, c);
    HashRing atA = a.cluster().membership().ring();
    HashRing atB = b.cluster().membership().ring();
    String key =
        KEYS.stream()
            .filter(k -> atA.ownerOf("h_" + k).equals(b.address()))
            .filter(k -> atB.ownerOf("h_" + k).equals(a.address()))
            .findFirst()
            .orElseThrow();
    int atABefore = a.callsReceived("GetPeerRateLimits") + a.callsReceived("ForwardBatches");
    int atBBefore = b.callsReceived("GetPeerRateLimits");

    RateLimitResponse answer = forward(c, a, hit(key, 1)).join();

    assertThat(answer.error()).isEmpty();
    assertThat(answer.metadata()).containsEntry("owner", b.address());
    assertThat(a.callsReceived("GetPeerRateLimits") + a.callsReceived("ForwardBatches") - atABefore)
        .as("c's forward reaches a, on a forwarding stream or as a call")
        .isEqualTo(1);
    assertThat(b.callsReceived("GetPeerRateLimits") - atBBefore).isEqualTo(1);
    assertThat(b.store().get("h_" + key)).isPresent();
    assertThat(a.store().get("h_" + key)).isEmpty();
  }

  @Test
  void addNode_theNewOwnerCannotBeCalled_theOldOwnerAnswersItselfRatherThanFail() {
    // With WEIR_PEER_FAILURE_MODE=fail a dead owner stays on the ring: the hand-on fails.
    cluster =
        LocalCluster.start(
            2, ClusterForwardingTest.SETTINGS.withPeerFailureMode(PeerFailureMode.FAIL));
    Node old = cluster.node(0);
    String[] key = new String[1];
    Node joined = joinAndFindMovedKey(old, key);
    cluster.kill(joined);
    assertThat(old.cluster().membership().ring().ownerOf("h_" + key[0]))
        .isEqualTo(joined.address());

    RateLimitResponse answer = forward(cluster.node(1), old, hit(key[0], 1)).join();

    assertThat(answer.error()).isEmpty();
    assertThat(answer.remaining()).isEqualTo(LIMIT - 4);
  }

  @Test
  void addNode_theNewOwnerIsDownWhenGlobalHitsArrive_queuedAndSentToItOnceItIsUp() {
    // With WEIR_PEER_FAILURE_MODE=fail a down owner stays on the ring and is not called.
    cluster =
        LocalCluster.start(
            2, ClusterGlobalTest.SETTINGS.withPeerFailureMode(PeerFailureMode.FAIL));
    Node old = cluster.node(0);
    String[] key = new String[1];
    Node joined = joinAndFindMovedKey(old, key);
    old.cluster().liveness().unreachable(joined.address(), "paused");
    assertThat(old.cluster().membership().ring().ownerOf("h_" + key[0]))
        .isEqualTo(joined.address());

    RateLimitResponse answer =
        forward(cluster.node(1), old, hit(key[0], 5).withBehavior(Behavior.GLOBAL)).join();

    assertThat(answer.error()).isEmpty();
    assertThat(old.cluster().global().queuedHits()).as("queued for the new owner").isEqualTo(1);
    old.cluster().liveness().back(joined.address());
    old.cluster().global().flushHits().join();
    assertThat(remainingAt(joined, key[0])).isEqualTo(LIMIT - 8);
    assertThat(joined.cluster().global().queuedBroadcasts()).isEqualTo(1);
    assertThat(old.cluster().global().droppedHits()).isZero();
  }

  @Test
  void addNode_theNewOwnerFailsGlobalHitsItMayHaveApplied_droppedAndCounted() {
    cluster = LocalCluster.start(2, ClusterGlobalTest.SETTINGS);
    Node old = cluster.node(0);
    String[] key = new String[1];
    Node joined = joinAndFindMovedKey(old, key);
    joined.beforeAnswerForwarded(
        items -> {
          throw new IllegalStateException("answer lost");
        });

    RateLimitResponse answer =
        forward(cluster.node(1), old, hit(key[0], 5).withBehavior(Behavior.GLOBAL)).join();

    assertThat(answer.error()).isEmpty();
    assertThat(old.cluster().global().queuedHits()).as("not sent twice").isZero();
    assertThat(old.cluster().global().droppedHits()).as("dropped and counted").isEqualTo(1);
  }
}
