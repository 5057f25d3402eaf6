package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.IndirectProbes;
import dev.weir.core.cluster.peer.PeerFailureMode;
import dev.weir.core.cluster.peer.PeerProber;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.testkit.LocalCluster.Node;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * One link of a three-node cluster cut (every peer call over it fails, both nodes still reach the
 * third): the cut pair keeps each other on their rings, vouched for by the third node through
 * indirect probes, and relays what they owe each other through it, so every key keeps one owner
 * and one count; a node cut from every peer is taken off the rings, and after the cut heals the
 * rings converge and calls go direct again.
 */
class PartialCutTest {

  private static final long LIMIT = 10;
  private static final Duration SETTLED = Duration.ofSeconds(5);

  private LocalCluster cluster;
  private Node a;
  private Node b;
  private Node c;

  @BeforeEach
  void start() {
    cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS);
    a = cluster.node(0);
    b = cluster.node(1);
    c = cluster.node(2);
  }

  @AfterEach
  void stop() {
    cluster.close();
  }

  private static RateLimitRequest hit(String key) {
    return RateLimitRequest.builder("cut", key).hits(1).limit(LIMIT).duration(600_000).build();
  }

  private static RateLimitRequest peek(String key) {
    return RateLimitRequest.builder("cut", key).hits(0).limit(LIMIT).duration(600_000).build();
  }

  /** Sends {@code n} hits on {@code key} through every node in turn; returns how many passed. */
  private int hitRoundRobin(String key, int n) {
    int admitted = 0;
    List<Node> nodes = List.of(a, b, c);
    for (int i = 0; i < n; i++) {
      RateLimitResponse answer = nodes.get(i % 3).check(hit(key)).get(0);
      assertThat(answer.error()).as("hit %d on %s through %s", i, key, nodes.get(i % 3)).isEmpty();
      if (answer.status() == Status.UNDER_LIMIT) {
        admitted++;
      }
    }
    return admitted;
  }

  private static long ringChanges(Node node) {
    return node.cluster().membership().changes();
  }

  private static boolean onRing(Node at, Node peer) {
    return at.cluster().membership().ring().contains(peer.address());
  }

  @Test
  void partialCut_everyKeyKeepsOneOwner_admitsTheLimitOnceWithoutErrorsOrRingChange()
      throws Exception {
    String ownedByC = cluster.keyOwnedBy(c, "cut", "c:");
    String ownedByA = cluster.keyOwnedBy(a, "cut", "a:");
    long[] before = {ringChanges(a), ringChanges(b), ringChanges(c)};

    cluster.cut(a, c);

    assertThat(hitRoundRobin(ownedByC, 30)).as("hits on C's key admitted").isEqualTo(LIMIT);
    assertThat(hitRoundRobin(ownedByA, 30)).as("hits on A's key admitted").isEqualTo(LIMIT);
    RateLimitResponse fromA = a.check(hit(ownedByC)).get(0);
    assertThat(fromA.error()).isEmpty();
    assertThat(fromA.metadata()).containsEntry("owner", c.address());
    Await.until(
        SETTLED,
        () -> b.address().equals(a.cluster().probes().voucher(c.address())),
        "B vouches for C at A");
    assertThat(a.cluster().liveness().isDown(c.address())).isTrue();
    assertThat(a.cluster().nodeHealth().health().message())
        .contains(
            "peer '" + c.address() + "' is down",
            "; '" + b.address() + "' reaches it and relays its items (it stays on the ring)");
    assertThat(a.cluster().health().ready()).isTrue();
    assertThat(c.cluster().probes().voucher(a.address())).isEqualTo(b.address());
    assertThat(new long[] {ringChanges(a), ringChanges(b), ringChanges(c)})
        .as("ring changes on A, B, C")
        .containsExactly(before);
    for (Node n : List.of(a, b, c)) {
      assertThat(n.cluster().membership().ring().peers()).hasSize(3);
    }
  }

  @Test
  void partialCutUnderConcurrentLoad_everyKeyAdmitsAtMostItsLimitAndNoDecisionFails()
      throws Exception {
    List<String> keys = new ArrayList<>();
    for (int k = 0; k < 30; k++) {
      keys.add("load:" + k);
    }
    Map<String, AtomicInteger> admitted =
        new ConcurrentHashMap<>();
    AtomicInteger failed = new AtomicInteger();
    cluster.cut(a, c);
    List<Thread> callers = new ArrayList<>();
    for (Node via : List.of(a, b, c)) {
      Thread t =
          new Thread(
              () -> {
                for (int round = 0; round < 2 * LIMIT; round++) {
                  List<RateLimitRequest> batch = keys.stream().map(PartialCutTest::hit).toList();
                  List<RateLimitResponse> answers =
                      via.check(batch.toArray(new RateLimitRequest[0]));
                  for (int k = 0; k < answers.size(); k++) {
                    if (!answers.get(k).error().isEmpty()) {
                      failed.incrementAndGet();
                    } else if (answers.get(k).status() == Status.UNDER_LIMIT) {
                      admitted
                          .computeIfAbsent(keys.get(k), x -> new AtomicInteger())
                          .incrementAndGet();
                    }
                  }
                }
              });
      t.start();
      callers.add(t);
    }
    for (Thread t : callers) {
      t.join(30_000);
      assertThat(t.isAlive()).as("a caller still calling after 30 s").isFalse();
    }

    assertThat(failed.get()).as("failed decisions").isZero();
    for (String key : keys) {
      assertThat(admitted.getOrDefault(key, new AtomicInteger()).get())
          .as("admitted on %s", key)
          .isEqualTo(LIMIT);
    }
    assertThat(a.cluster().membership().ring().peers()).hasSize(3);
  }

  @Test
  void oneWayCut_ownerReachedThroughTheThirdNode_noRingChange() throws Exception {
    String ownedByC = cluster.keyOwnedBy(c, "cut", "c:");
    long before = ringChanges(a);

    cluster.cutOneWay(a, c);

    assertThat(hitRoundRobin(ownedByC, 30)).isEqualTo(LIMIT);
    Await.until(
        SETTLED,
        () -> b.address().equals(a.cluster().probes().voucher(c.address())),
        "B vouches for C at A");
    assertThat(ringChanges(a)).isEqualTo(before);
    assertThat(c.cluster().liveness().isDown(a.address())).isFalse();
  }

  @Test
  void cutHeals_callsGoDirectAgain() throws Exception {
    String ownedByC = cluster.keyOwnedBy(c, "cut", "c:");
    cluster.cut(a, c);
    assertThat(a.check(hit(ownedByC)).get(0).error()).isEmpty();
    int relayedAtB = b.itemCallsRelayed();
    assertThat(a.check(hit(ownedByC)).get(0).error()).isEmpty();
    assertThat(b.itemCallsRelayed()).as("relayed through B").isGreaterThan(relayedAtB);

    cluster.heal(a, c);

    Await.until(
        SETTLED, () -> !a.cluster().liveness().isDown(c.address()), "A reaches C again");
    Await.until(
        SETTLED, () -> !c.cluster().liveness().isDown(a.address()), "C reaches A again");
    // Indirect probes (no items) may still pass through B after the heal; forwarded items do not.
    int atB = b.itemCallsRelayed();
    RateLimitResponse direct = a.check(hit(ownedByC)).get(0);
    assertThat(direct.error()).isEmpty();
    assertThat(direct.remaining()).as("one count throughout").isEqualTo(LIMIT - 3);
    assertThat(b.itemCallsRelayed()).as("no item relayed through B").isEqualTo(atB);
    assertThat(a.cluster().probes().voucher(c.address())).isNull();
  }

  @Test
  void flappingLink_ringNeverChanges() throws Exception {
    String ownedByC = cluster.keyOwnedBy(c, "cut", "c:");
    String ownedByA = cluster.keyOwnedBy(a, "cut", "a:");
    long[] before = {ringChanges(a), ringChanges(b), ringChanges(c)};

    for (int i = 0; i < 10; i++) {
      cluster.cut(a, c);
      int relayed = b.itemCallsRelayed();
      assertThat(a.check(hit(ownedByC)).get(0).error()).isEmpty();
      assertThat(b.itemCallsRelayed())
          .as("A's item relayed once in cut %d", i)
          .isEqualTo(relayed + 1);
      relayed = b.itemCallsRelayed();
      assertThat(c.check(hit(ownedByA)).get(0).error()).isEmpty();
      assertThat(b.itemCallsRelayed())
          .as("C's item relayed once in cut %d", i)
          .isEqualTo(relayed + 1);
      cluster.heal(a, c);
      Await.until(
          SETTLED, () -> !a.cluster().liveness().isDown(c.address()), "A reaches C again");
      assertThat(a.check(hit(ownedByC)).get(0).error()).isEmpty();
      assertThat(c.check(hit(ownedByA)).get(0).error()).isEmpty();
    }

    assertThat(new long[] {ringChanges(a), ringChanges(b), ringChanges(c)}).containsExactly(before);
    assertThat(a.check(hit(ownedByC)).get(0).status()).isEqualTo(Status.OVER_LIMIT);
  }

  /**
   * Four nodes started in place of the three: {@code from} and {@code owner}, the other two in
   * address order ({@code firstChecker}, then {@code voucher}), and a key {@code owner} owns.
   */
  private record FourNodes(
      Node from, Node owner, Node firstChecker, Node voucher, String ownedByOwner) {}

  /** Closes the three-node cluster and starts {@link FourNodes} in its place. */
  private FourNodes startFourNodes() {
    cluster.close();
    cluster = LocalCluster.start(4, ClusterForwardingTest.SETTINGS);
    Node from = cluster.node(0);
    Node owner = cluster.node(2);
    List<Node> others =
        cluster.nodes().stream()
            .filter(n -> n != from && n != owner)
            .sorted(Comparator.comparing(Node::address))
            .toList();
    return new FourNodes(
        from, owner, others.get(0), others.get(1), cluster.keyOwnedBy(owner, "cut", "c:"));
  }

  /**
   * Cuts A from C and returns once each has found the cut (one call across it) and B vouches for
   * C at A and for A at C.
   */
  private void cutAFromCUntilBVouchesForBoth() throws InterruptedException {
    cluster.cut(a, c);
    a.check(hit(cluster.keyOwnedBy(c, "cut", "warm-c:")));
    c.check(hit(cluster.keyOwnedBy(a, "cut", "warm-a:")));
    Await.until(
        SETTLED,
        () ->
            b.address().equals(a.cluster().probes().voucher(c.address()))
                && b.address().equals(c.cluster().probes().voucher(a.address())),
        "B vouches for C at A and for A at C");
  }

  @Test
  void firstCheckerDoesNotReachTheOwner_itemRelayedAgainThroughTheVoucher_andTheVoucherAskedFirstNextCut()
      throws Exception {
    FourNodes four = startFourNodes();
    cluster.cut(four.from(), four.owner());
    cluster.cut(four.firstChecker(), four.owner());

    RateLimitResponse first = four.from().check(hit(four.ownedByOwner())).get(0);

    assertThat(first.error()).as("the first item relayed during the first round").isEmpty();
    assertThat(first.metadata()).containsEntry("owner", four.owner().address());
    assertThat(four.from().cluster().probes().voucher(four.owner().address()))
        .isEqualTo(four.voucher().address());

    cluster.heal(four.from(), four.owner());
    Await.until(
        SETTLED,
        () -> !four.from().cluster().liveness().isDown(four.owner().address()),
        "the owner answers again");
    cluster.cut(four.from(), four.owner());
    int throughFirstChecker = four.firstChecker().itemCallsRelayed();

    RateLimitResponse again = four.from().check(hit(four.ownedByOwner())).get(0);

    assertThat(again.error()).as("the first item relayed after the cut came back").isEmpty();
    assertThat(four.firstChecker().itemCallsRelayed())
        .as("items relayed through the checker that does not reach the owner")
        .isEqualTo(throughFirstChecker);
  }

  /**
   * The voucher relays indirect probes only once the first checker has the item, so the item goes
   * through the first checker before the round's verdict names the voucher, whichever thread runs
   * first.
   */
  @Test
  void relayFailsAfterTheOwnerCountedTheItem_itemNotRelayedAgainThroughAnotherVoucher()
      throws Exception {
    FourNodes four = startFourNodes();
    four.firstChecker().afterRelayAnswered(
        () -> {
          throw new IllegalStateException("the answer of the owner was lost");
        });
    four.voucher().holdProbeRelaysUntil(four.firstChecker().firstItemCallRelayed());
    cluster.cut(four.from(), four.owner());

    four.from().check(hit(four.ownedByOwner()));

    assertThat(four.firstChecker().itemCallsRelayed())
        .as("items relayed through the first checker")
        .isEqualTo(1);
    assertThat(four.from().cluster().probes().voucher(four.owner().address()))
        .as("the round's verdict")
        .isEqualTo(four.voucher().address());
    assertThat(four.owner().check(peek(four.ownedByOwner())).get(0).remaining())
        .as("hits the owner counted")
        .isEqualTo(LIMIT - 1);
    assertThat(four.voucher().itemCallsRelayed())
        .as("items relayed through the second voucher")
        .isZero();
  }

  @Test
  void voucherLosesTheOwnerToo_ownerLeavesTheRingOnce() throws Exception {
    String ownedByC = cluster.keyOwnedBy(c, "cut", "c:");
    cluster.cut(a, c);
    assertThat(a.check(hit(ownedByC)).get(0).error()).isEmpty();
    Await.until(
        SETTLED,
        () -> b.address().equals(a.cluster().probes().voucher(c.address())),
        "B vouches for C at A");
    long before = ringChanges(a);

    cluster.cut(b, c);
    assertThat(b.check(hit(ownedByC)).get(0).error()).as("B finds C down, reroutes").isEmpty();

    Await.until(SETTLED, () -> !onRing(a, c), "C off A's ring once nobody reaches it");
    RateLimitResponse rerouted = a.check(hit(ownedByC)).get(0);
    assertThat(rerouted.error()).isEmpty();
    assertThat(rerouted.metadata().get("owner")).isNotEqualTo(c.address());
    assertThat(ringChanges(a)).isEqualTo(before + 1);
  }

  @Test
  void isolatedNode_leavesTheRings_answersAlone_andRingsConvergeAfterHealWithoutLosingCounts()
      throws Exception {
    String ownedByC = cluster.keyOwnedBy(c, "cut", "c:");
    String warmC = cluster.keyOwnedBy(c, "cut", "warm-c:");
    String warmA = cluster.keyOwnedBy(a, "cut", "warm-a:");
    String warmB = cluster.keyOwnedBy(b, "cut", "warm-b:");
    long[] before = {ringChanges(a), ringChanges(b)};

    cluster.cut(a, c);
    cluster.cut(b, c);
    // Calls find the cut (a connection that stays up while its calls fail is found by traffic).
    a.check(hit(warmC));
    b.check(hit(warmC));
    c.check(hit(warmA));
    c.check(hit(warmB));
    for (Node survivor : List.of(a, b)) {
      Await.until(SETTLED, () -> !onRing(survivor, c), "C off the ring of " + survivor.address());
    }
    Await.until(
        SETTLED,
        () -> c.cluster().membership().ring().peers().equals(List.of(c.address())),
        "C alone on its ring");
    int throughA = 0;
    for (int i = 0; i < 4; i++) {
      RateLimitResponse r = a.check(hit(ownedByC)).get(0);
      assertThat(r.error()).isEmpty();
      assertThat(r.metadata().get("owner")).isNotEqualTo(c.address());
      throughA += r.status() == Status.UNDER_LIMIT ? 1 : 0;
    }
    int throughC = 0;
    for (int i = 0; i < 6; i++) {
      RateLimitResponse r = c.check(hit(ownedByC)).get(0);
      assertThat(r.error()).isEmpty();
      throughC += r.status() == Status.UNDER_LIMIT ? 1 : 0;
    }
    assertThat(throughA).isEqualTo(4);
    assertThat(throughC).isEqualTo(6);
    long keptAtLeast = LIMIT - throughC;

    cluster.heal(a, c);
    cluster.heal(b, c);

    for (Node n : List.of(a, b, c)) {
      Await.until(
          SETTLED,
          () -> n.cluster().membership().ring().peers().size() == 3,
          "every peer back on the ring of " + n.address());
    }
    Await.until(
        SETTLED,
        () -> {
          RateLimitResponse r = b.check(peek(ownedByC)).get(0);
          return r.error().isEmpty() && r.remaining() <= keptAtLeast;
        },
        "the owner's count holds the more consumed side");
    assertThat(new long[] {ringChanges(a), ringChanges(b)})
        .as("A's and B's rings changed once for C's isolation and once for its return")
        .containsExactly(before[0] + 2, before[1] + 2);
    RateLimitResponse after = a.check(hit(ownedByC)).get(0);
    assertThat(after.metadata()).containsEntry("owner", c.address());
    assertThat(after.remaining()).isEqualTo(keptAtLeast - 1);
  }

  /** Returns a key {@code c} owns whose next owner, with {@code c} off the ring, is {@code a}. */
  private String keyOwnedByCMovingToA() {
    dev.weir.ring.HashRing ring = a.cluster().membership().ring();
    for (int i = 0; ; i++) {
      String key = "k" + i;
      String hashKey = "cut_" + key;
      if (ring.ownerOf(hashKey).equals(c.address())
          && ring.without(c.address()).ownerOf(hashKey).equals(a.address())) {
        return key;
      }
    }
  }

  /** Hits {@code key} through {@code node} until it is refused; returns how many passed. */
  private int hitUntilOverLimit(Node node, String key) {
    int admitted = 0;
    for (int i = 0; i < 3 * LIMIT; i++) {
      RateLimitResponse answer = node.check(hit(key)).get(0);
      assertThat(answer.error()).as("hit %d on %s through %s", i, key, node).isEmpty();
      if (answer.status() != Status.UNDER_LIMIT) {
        return admitted;
      }
      admitted++;
    }
    return admitted;
  }

  @Test
  void partialCut_rollingRestartOfTheOwner_bucketsReachTheNextOwnerThroughTheVoucher()
      throws Exception {
    String key = keyOwnedByCMovingToA();
    cutAFromCUntilBVouchesForBoth();
    for (int i = 0; i < 5; i++) {
      assertThat(b.check(hit(key)).get(0).status()).isEqualTo(Status.UNDER_LIMIT);
    }

    cluster.stop(c);
    Await.until(SETTLED, () -> !onRing(a, c), "C off A's ring");
    assertThat(hitUntilOverLimit(a, key))
        .as("hits on C's key admitted by A after C handed it off across the cut")
        .isEqualTo(LIMIT - 5);
  }

  @Test
  void partialCut_ownerLeavingAndStillDraining_itsKeysStillAnsweredThroughTheVoucher()
      throws Exception {
    String key = keyOwnedByCMovingToA();
    cutAFromCUntilBVouchesForBoth();

    // SIGTERM: C's leave notice reaches B, not A; C's listener still drains.
    c.cluster().leave(Duration.ofSeconds(5));
    RateLimitResponse whileDraining = a.check(hit(key)).get(0);

    assertThat(whileDraining.error()).as("C's key at A while C drains").isEmpty();
    assertThat(whileDraining.status()).isEqualTo(Status.UNDER_LIMIT);
  }

  @Test
  void partialCut_ownerLeavingAndStillDraining_hitsRelayedAfterItLeftItsRingCountOnTheNextOwner()
      throws Exception {
    ClusterSettings settings = ClusterForwardingTest.SETTINGS;
    FakeScheduler timers = startOnFakeTime(3, settings);
    String key = keyOwnedByCMovingToA();
    cutAFromCUntilBVouchesForBoth();

    // SIGTERM: C hands its buckets to A and leaves its own ring; its notice reaches B, not A.
    c.cluster().leave(Duration.ofSeconds(5));
    int k = 3;
    for (int i = 0; i < k; i++) {
      RateLimitResponse whileDraining = a.check(hit(key)).get(0);
      assertThat(whileDraining.error()).as("hit %d on C's key at A while C drains", i).isEmpty();
      assertThat(whileDraining.status()).isEqualTo(Status.UNDER_LIMIT);
    }
    timers.advance(settings.batchTimeout().plusMillis(1));
    Await.until(
        SETTLED,
        () -> a.check(peek(key)).get(0).error().isEmpty() && !onRing(a, c),
        "C off A's ring");

    assertThat(hitUntilOverLimit(a, key))
        .as("hits on C's key admitted by A after %d relayed to C once it had left its ring", k)
        .isEqualTo(LIMIT - k);
  }

  @Test
  void partialCut_ownerLeftLongerAgoThanTheVouchersGrace_farNodeTakesItOffItsRingAtOnce()
      throws Exception {
    ClusterSettings settings = ClusterForwardingTest.SETTINGS;
    FakeScheduler timers = startOnFakeTime(3, settings);
    String key = keyOwnedByCMovingToA();
    cutAFromCUntilBVouchesForBoth();

    // SIGTERM: C's leave notice reaches B, not A; C's listener still drains.
    c.cluster().leave(Duration.ofSeconds(5));
    timers.advance(settings.batchTimeout().plusMillis(1));
    RateLimitResponse afterGrace = a.check(hit(key)).get(0);

    assertThat(afterGrace.error()).as("C's key at A after B's grace for C").isEmpty();
    assertThat(a.cluster().membership().ring().ownerOf("cut_" + key))
        .as("owner of C's key on A's ring")
        .isEqualTo(a.address());
    assertThat(afterGrace.metadata()).as("answered by A itself").doesNotContainKey("owner");
    assertThat(onRing(a, c)).as("C on A's ring").isFalse();
    assertThat(a.cluster().probes().unreached()).contains(c.address());
  }

  @Test
  void partialCut_ownerCopyingBeforeItsNotice_farNodeKeepsItVouchedAndOnItsRing() throws Exception {
    FakeScheduler timers = startOnFakeTime(3, ClusterForwardingTest.SETTINGS);
    // A member that joined, as a started pod does: its probes answer from its serving flag.
    c = cluster.restart(c);
    assertThat(c.cluster().serving()).as("C serving once joined").isTrue();
    String key = keyOwnedByCMovingToA();
    cutAFromCUntilBVouchesForBoth();
    assertThat(a.check(hit(key)).get(0).error()).isEmpty();
    CountDownLatch copying = new CountDownLatch(1);
    CountDownLatch probed = new CountDownLatch(1);
    for (Node receiver : List.of(a, b)) {
      receiver.beforeAcceptBuckets(
          () -> {
            copying.countDown();
            awaitQuietly(probed);
          });
    }

    // SIGTERM: C copies its buckets to their next owners; its leave notice is not sent yet.
    CompletableFuture<Void> left =
        CompletableFuture.runAsync(() -> c.cluster().leave(Duration.ofSeconds(5)));
    try {
      assertThat(copying.await(10, TimeUnit.SECONDS)).as("C's copy arrived").isTrue();
      assertThat(c.cluster().serving()).as("C serving while it copies").isTrue();
      for (int round = 1; round <= IndirectProbes.ROUNDS_TO_DROP; round++) {
        timers.advance(PeerProber.INTERVAL);
        a.cluster().probes().settled(c.address()).get(10, TimeUnit.SECONDS);
        assertThat(a.cluster().probes().voucher(c.address()))
            .as("C's voucher at A after round %d of C's copy", round)
            .isEqualTo(b.address());
      }
      assertThat(onRing(a, c)).as("C on A's ring before its notice").isTrue();
    } finally {
      probed.countDown();
    }
    left.get(10, TimeUnit.SECONDS);
    assertThat(c.cluster().serving()).as("C serving once its notice went out").isFalse();
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Replaces the cluster with one of {@code n} nodes with {@code settings} on a fake clock of its
   * own; returns the scheduler its timers run on.
   */
  private FakeScheduler startOnFakeTime(int n, ClusterSettings settings) {
    FakeClock clock = new FakeClock();
    FakeScheduler timers = new FakeScheduler(clock);
    cluster.close();
    cluster = LocalCluster.startInFakeTime(n, settings, clock, timers);
    a = cluster.node(0);
    b = cluster.node(1);
    c = cluster.node(2);
    return timers;
  }

  @Test
  void failMode_leaverRestartsAcrossACutItsReturnNoticeMissesTheFarNode_backOnItsRingThroughTheVoucher()
      throws Exception {
    leaverRestartsAcrossACut_backOnTheFarNodesRingThroughTheVoucher(PeerFailureMode.FAIL);
  }

  @Test
  void rerouteMode_leaverRestartsAcrossACutItsReturnNoticeMissesTheFarNode_backOnItsRingThroughTheVoucher()
      throws Exception {
    leaverRestartsAcrossACut_backOnTheFarNodesRingThroughTheVoucher(PeerFailureMode.REROUTE);
  }

  private void leaverRestartsAcrossACut_backOnTheFarNodesRingThroughTheVoucher(PeerFailureMode mode)
      throws Exception {
    ClusterSettings settings = ClusterForwardingTest.SETTINGS.withPeerFailureMode(mode);
    FakeScheduler timers = startOnFakeTime(3, settings);
    String key = keyOwnedByCMovingToA();

    // SIGTERM: C's leave notice reaches A and B; then A<->C is cut and C restarts, its copy
    // requests and return notices to A failing across the cut.
    cluster.stop(c);
    timers.advance(settings.batchTimeout().plusMillis(1));
    assertThat(onRing(a, c)).as("C on A's ring after its leave").isFalse();
    cluster.cut(a, c);
    c = cluster.startAgain(c);
    assertThat(onRing(b, c)).as("C on B's ring after its return").isTrue();
    timers.advance(ClusterNode.DEPARTED_TTL);
    timers.advance(PeerProber.INTERVAL);

    Await.until(
        SETTLED,
        () -> b.address().equals(a.cluster().probes().voucher(c.address())),
        "B vouches for C at A");
    Await.until(SETTLED, () -> onRing(a, c), "C back on A's ring");
    int admitted = 0;
    for (Node via : List.of(a, b, a, b, a, b, a, b, a, b, a, b)) {
      RateLimitResponse r = via.check(hit(key)).get(0);
      assertThat(r.error()).as("hit on C's key through %s", via.address()).isEmpty();
      admitted += r.status() == Status.UNDER_LIMIT ? 1 : 0;
    }
    assertThat(admitted).as("hits on C's key admitted through A and B").isEqualTo(LIMIT);
    if (mode == PeerFailureMode.FAIL) {
      return;
    }

    // C leaves again: its notice misses A across the cut, and B's refusal tells A of it.
    cluster.stop(c);
    timers.advance(settings.batchTimeout().plusMillis(1));
    RateLimitResponse afterSecondLeave = a.check(hit(key)).get(0);
    assertThat(afterSecondLeave.error()).as("hit on C's key at A after C's second leave").isEmpty();
    assertThat(onRing(a, c)).as("C on A's ring after its second leave").isFalse();
  }

  @Test
  void establishedVoucherStopsRelaying_itemRelayedThroughAnotherVoucherAtOnce() throws Exception {
    FakeScheduler timers = startOnFakeTime(4, ClusterForwardingTest.SETTINGS);
    String ownedByC = cluster.keyOwnedBy(c, "cut", "c:");
    cluster.cut(a, c);
    assertThat(a.check(hit(ownedByC)).get(0).error()).as("the item that finds the cut").isEmpty();
    String vouching = a.cluster().probes().voucher(c.address());
    Node voucher =
        cluster.nodes().stream().filter(n -> n.address().equals(vouching)).findFirst().orElseThrow();
    Node spare =
        cluster.nodes().stream().filter(n -> n != a && n != c && n != voucher).findFirst().orElseThrow();
    // The voucher loses its own link to C and finds C down; the spare still reaches C.
    cluster.cut(voucher, c);
    assertThat(voucher.check(hit(ownedByC)).get(0).error()).as("the voucher finds C down").isEmpty();
    assertThat(voucher.cluster().liveness().isDown(c.address())).isTrue();

    RateLimitResponse relayed = a.check(hit(ownedByC)).get(0);

    assertThat(relayed.error()).as("C's item at A once its voucher stopped relaying").isEmpty();
    assertThat(relayed.metadata()).containsEntry("owner", c.address());
    assertThat(relayed.remaining()).as("C counted every hit once").isEqualTo(LIMIT - 3);
    assertThat(a.cluster().probes().voucher(c.address())).isEqualTo(spare.address());
  }

  @Test
  void partialCut_ownerReturnsFromARestart_nextOwnerHandsItsCountsBackThroughTheVoucher()
      throws Exception {
    String key = keyOwnedByCMovingToA();
    cluster.cut(a, c);
    cluster.stop(c);
    Await.until(SETTLED, () -> !onRing(a, c), "C off A's ring");
    assertThat(hitUntilOverLimit(a, key)).as("hits on C's key admitted by A").isEqualTo(LIMIT);

    c = cluster.startAgain(c);
    Await.until(SETTLED, () -> onRing(a, c) && onRing(b, c), "C back on A's and B's rings");
    Await.until(
        SETTLED,
        () -> {
          RateLimitResponse r = b.check(peek(key)).get(0);
          return r.error().isEmpty()
              && c.address().equals(r.metadata().get("owner"))
              && r.remaining() == 0;
        },
        "C, back, has A's count of its key");
    assertThat(b.transfersRelayed()).as("transfers B relayed").isPositive();
    assertThat(hitUntilOverLimit(b, key)).as("hits on C's key admitted after its return").isZero();
  }
}
