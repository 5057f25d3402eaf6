package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerInputValidator;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.GregorianInterval;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.testkit.LocalCluster.Node;
import dev.weir.core.testkit.RecordingMetrics;
import dev.weir.core.time.SystemClock;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class ClusterGlobalTest {

  // Sync timers far away: the tests flush the GLOBAL queues themselves; hand-off on.
  static final ClusterSettings SETTINGS =
      new ClusterSettings(
          512, ClusterSettings.defaults().hash(), 1000, Duration.ofNanos(500_000),
          Duration.ofSeconds(5), false, Duration.ofHours(1), 1000, Duration.ofSeconds(5),
          "static", List.of(), true);

  private static final long CLIENT_SKEW = PeerInputValidator.MAX_CLIENT_CLOCK_SKEW.toMillis();

  private LocalCluster cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static RateLimitRequest global(long hits, long limit) {
    return RateLimitRequest.builder("g", "acct")
        .hits(hits)
        .limit(limit)
        .duration(60_000)
        .behavior(Behavior.GLOBAL)
        .build();
  }

  private static void sync(Node from, Node owner) {
    from.cluster().global().flushHits().join();
    owner.cluster().global().flushBroadcasts().join();
  }

  @Test
  void reportTo_queuedHitsAndBroadcast_queueLengthsAndFlushesReported() {
    cluster = LocalCluster.start(3, SETTINGS);
    Node owner = cluster.ownerOf("g_acct");
    Node other = cluster.nonOwnersOf("g_acct").get(0);
    RecordingMetrics otherMetrics = new RecordingMetrics();
    RecordingMetrics ownerMetrics = new RecordingMetrics();
    other.cluster().global().reportTo(otherMetrics);
    owner.cluster().global().reportTo(ownerMetrics);

    other.check(global(1, 10));
    assertThat(other.cluster().global().queuedHits()).isEqualTo(1);
    other.cluster().global().flushHits().join();
    assertThat(other.cluster().global().queuedHits()).isZero();
    assertThat(owner.cluster().global().queuedBroadcasts()).isEqualTo(1);
    owner.cluster().global().flushBroadcasts().join();

    assertThat(otherMetrics.events()).containsExactly("global send ok");
    assertThat(ownerMetrics.events()).containsExactly("global broadcast ok");
  }

  @Test
  void sync_hitsResetHitsOnNonOwner_ownerCountsOnlyTheHitsAfterTheReset() {
    cluster = LocalCluster.start(2, SETTINGS);
    Node owner = cluster.ownerOf("g_acct");
    Node other = cluster.nonOwnersOf("g_acct").get(0);
    other.check(global(5, 10));
    other.check(global(0, 10).withBehavior(Behavior.GLOBAL | Behavior.RESET_REMAINING));
    assertThat(other.check(global(2, 10)).get(0).remaining()).isEqualTo(8);

    sync(other, owner);

    assertThat(owner.check(global(0, 10)).get(0).remaining())
        .as("the 5 hits before the reset erased, the 2 after it counted")
        .isEqualTo(8);
  }

  @Test
  void sync_resetThenHitsOnNonOwnerOfAnOwnedBucket_hitsAfterTheResetStillCount() {
    cluster = LocalCluster.start(2, SETTINGS);
    Node owner = cluster.ownerOf("g_acct");
    Node other = cluster.nonOwnersOf("g_acct").get(0);
    other.check(global(5, 10));
    sync(other, owner);
    other.check(global(0, 10).withBehavior(Behavior.GLOBAL | Behavior.RESET_REMAINING));
    other.check(global(2, 10));

    sync(other, owner);

    assertThat(owner.check(global(0, 10)).get(0).remaining())
        .as("the owner's bucket reset, then the 2 hits")
        .isEqualTo(8);
  }

  @Test
  void check_globalOnNonOwner_answersFromLocalCopyWithOwnerWithoutCallingOwner() {
    cluster = LocalCluster.start(3, SETTINGS);
    Node owner = cluster.ownerOf("g_acct");
    Node other = cluster.nonOwnersOf("g_acct").get(0);

    RateLimitResponse r = other.check(global(1, 10)).get(0);

    assertThat(r.remaining()).isEqualTo(9);
    assertThat(r.metadata()).containsEntry("owner", owner.address());
    assertThat(owner.callsReceived("GetPeerRateLimits")).isZero();
    assertThat(owner.store().get("g_acct")).isEmpty();
  }

  @Test
  void flush_hitsFromTwoNonOwners_ownerSumsAndEveryPeerConvergesWithSameResetTime() {
    cluster = LocalCluster.start(3, SETTINGS);
    Node owner = cluster.ownerOf("g_acct");
    Node a = cluster.nonOwnersOf("g_acct").get(0);
    Node b = cluster.nonOwnersOf("g_acct").get(1);

    a.check(global(2, 10));
    a.check(global(1, 10));
    b.check(global(3, 10));
    a.cluster().global().flushHits().join();
    b.cluster().global().flushHits().join();
    owner.cluster().global().flushBroadcasts().join();

    RateLimitResponse atOwner = owner.check(global(0, 10)).get(0);
    RateLimitResponse atA = a.check(global(0, 10)).get(0);
    RateLimitResponse atB = b.check(global(0, 10)).get(0);
    assertThat(atOwner.remaining()).isEqualTo(4);
    assertThat(atA.remaining()).isEqualTo(4);
    assertThat(atB.remaining()).isEqualTo(4);
    assertThat(atA.resetTime()).isEqualTo(atOwner.resetTime());
    assertThat(atB.resetTime()).isEqualTo(atOwner.resetTime());
    assertThat(owner.callsReceived("GetPeerRateLimits")).isEqualTo(2);
    assertThat(a.callsReceived("UpdatePeerGlobals")).isEqualTo(1);
  }

  @Test
  void flush_hostileItemsMergedWithOthers_everyHitReachesTheOwner() {
    cluster = LocalCluster.start(2, SETTINGS);
    Node owner = cluster.ownerOf("g_acct");
    Node other = cluster.nonOwnersOf("g_acct").get(0);
    RateLimitRequest.Builder hostile =
        RateLimitRequest.builder("g", "acct").hits(1).limit(10).duration(60_000);

    // The first item's created_at and the last one's flags used to travel with every merged hit,
    // and the owner refuses a created_at minutes away and flags it does not know.
    other.check(
        hostile
            .behavior(Behavior.GLOBAL)
            .createdAt(SystemClock.INSTANCE.wallMillis() - CLIENT_SKEW + 1_000)
            .build());
    other.check(global(2, 10));
    other.check(hostile.behavior(Behavior.GLOBAL | 64).createdAt(0).build());
    sync(other, owner);

    assertThat(owner.check(global(0, 10)).get(0).remaining()).isEqualTo(6);
  }

  @Test
  void flush_laterItemWithOtherFlags_theOwnerCountsEveryHitUnderTheFirstItemsWindow() {
    cluster = LocalCluster.start(2, SETTINGS);
    Node owner = cluster.ownerOf("g_acct");
    Node other = cluster.nonOwnersOf("g_acct").get(0);

    other.check(global(2, 10));
    other.check(
        RateLimitRequest.builder("g", "acct")
            .hits(1)
            .limit(10)
            .duration(GregorianInterval.HOURS.code())
            .behavior(Behavior.GLOBAL | Behavior.DURATION_IS_GREGORIAN)
            .build());
    sync(other, owner);

    RateLimitResponse atOwner = owner.check(global(0, 10)).get(0);
    assertThat(atOwner.remaining()).as("the 3 hits counted").isEqualTo(7);
    assertThat(other.check(global(0, 10)).get(0).remaining()).isEqualTo(7);
  }

  /** Starts {@code n} nodes whose engines and peer checks read {@code clock}. */
  private static LocalCluster startOn(FakeClock clock, int n) {
    RateLimitEngine engine = new RateLimitEngine(ZoneOffset.UTC);
    return LocalCluster.start(
        n, SETTINGS, clock, store -> new LocalLimiter(engine, store, clock)::decide);
  }

  private static RateLimitRequest globalAt(long hits, long createdAt) {
    return RateLimitRequest.builder("g", "acct")
        .hits(hits)
        .limit(10)
        .duration(3_600_000)
        .behavior(Behavior.GLOBAL)
        .createdAt(createdAt)
        .build();
  }

  @Test
  void check_createdAtSixMinutesBehind_everyNodeAnswersAnErrorNamingTheFieldAndCountsNothing() {
    FakeClock clock = new FakeClock();
    cluster = startOn(clock, 3);
    Node owner = cluster.ownerOf("g_acct");
    Node other = cluster.nonOwnersOf("g_acct").get(0);
    long slow = clock.wallMillis() - 360_000;

    for (Node n : List.of(owner, other)) {
      RateLimitResponse r = n.check(globalAt(8, slow)).get(0);
      assertThat(r.error())
          .as(n.address())
          .startsWith("field 'created_at' is " + slow + ", 360000 ms behind this node's clock")
          .contains("a caller's clock may differ from it by at most 240000 ms");
    }
    RateLimitResponse forwarded =
        other.check(globalAt(8, slow).withBehavior(Behavior.BATCHING)).get(0);
    assertThat(forwarded.error()).startsWith("field 'created_at' is " + slow + ", 360000 ms behind");
    sync(other, owner);

    assertThat(owner.check(globalAt(0, clock.wallMillis())).get(0).remaining()).isEqualTo(10);
  }

  @Test
  void check_createdAtTenMinutesAhead_ownerAnswersAnErrorAndItsBroadcastsStillReachThePeers() {
    FakeClock clock = new FakeClock();
    cluster = startOn(clock, 3);
    Node owner = cluster.ownerOf("g_acct");
    Node other = cluster.nonOwnersOf("g_acct").get(0);
    long fast = clock.wallMillis() + 600_000;

    RateLimitResponse r = owner.check(globalAt(1, fast)).get(0);
    assertThat(r.error())
        .startsWith("field 'created_at' is " + fast + ", 600000 ms ahead of this node's clock")
        .contains("a caller's clock may differ from it by at most 240000 ms");

    owner.check(globalAt(8, clock.wallMillis()));
    owner.cluster().global().flushBroadcasts().join();
    assertThat(other.check(globalAt(0, clock.wallMillis())).get(0).remaining()).isEqualTo(2);
  }

  @Test
  void broadcast_clientCreatedAtNearTheSkewInThePast_sentWithTheOwnersTimeAndCopiedByThePeers() {
    FakeClock clock = new FakeClock();
    cluster = startOn(clock, 3);
    Node owner = cluster.ownerOf("g_acct");
    List<Node> others = cluster.nonOwnersOf("g_acct");

    owner.check(globalAt(8, clock.wallMillis() - CLIENT_SKEW + 1_000));
    clock.advance(PeerInputValidator.NODE_CLOCK_ALLOWANCE.plusSeconds(2));
    owner.cluster().global().flushBroadcasts().join();

    for (Node n : others) {
      assertThat(n.check(globalAt(0, clock.wallMillis())).get(0).remaining())
          .as(n.address())
          .isEqualTo(2);
    }
  }

  @Test
  void flush_hitsBeyondRemaining_ownerDrainsToZeroAndPeersSeeOverLimit() {
    cluster = LocalCluster.start(2, SETTINGS);
    Node owner = cluster.ownerOf("g_acct");
    Node other = cluster.nonOwnersOf("g_acct").get(0);
    owner.check(global(4, 5));
    owner.cluster().global().flushBroadcasts().join();
    assertThat(other.check(global(0, 5)).get(0).remaining()).isEqualTo(1);

    other.check(global(1, 5));
    other.check(global(1, 5));
    sync(other, owner);

    assertThat(owner.check(global(0, 5)).get(0).remaining()).isZero();
    RateLimitResponse r = other.check(global(1, 5)).get(0);
    assertThat(r.status()).isEqualTo(Status.OVER_LIMIT);
    assertThat(r.remaining()).isZero();
  }

  @Test
  void refund_onOwner_everyNodesCopyShowsRemainingAboveTheLimit() {
    cluster = LocalCluster.start(3, SETTINGS);
    Node owner = cluster.ownerOf("g_acct");
    owner.check(global(8, 10));
    owner.cluster().global().flushBroadcasts().join();

    assertThat(owner.check(global(-20, 10)).get(0).remaining()).isEqualTo(22);
    owner.cluster().global().flushBroadcasts().join();

    for (Node n : cluster.nodes()) {
      assertThat(n.check(global(0, 10)).get(0).remaining()).as(n.address()).isEqualTo(22);
    }
  }

  @Test
  void refund_onNonOwner_ownerAndEveryOtherCopyShowTheRefund() {
    cluster = LocalCluster.start(3, SETTINGS);
    Node owner = cluster.ownerOf("g_acct");
    Node a = cluster.nonOwnersOf("g_acct").get(0);
    Node b = cluster.nonOwnersOf("g_acct").get(1);
    owner.check(global(10, 10));
    owner.cluster().global().flushBroadcasts().join();

    a.check(global(-15, 10));
    sync(a, owner);

    for (Node n : List.of(owner, a, b)) {
      assertThat(n.check(global(0, 10)).get(0).remaining()).as(n.address()).isEqualTo(15);
    }
  }

  @Test
  void refund_fixedWindowBelowZero_everyNodesCopyAdmitsTheRefundedHits() {
    cluster = LocalCluster.start(3, SETTINGS);
    Node owner = cluster.ownerOf("g_acct");
    Node other = cluster.nonOwnersOf("g_acct").get(0);
    RateLimitRequest.Builder window =
        RateLimitRequest.builder("g", "acct")
            .limit(4)
            .duration(3_600_000)
            .algorithm(dev.weir.core.model.Algorithm.FIXED_WINDOW)
            .behavior(Behavior.GLOBAL);
    owner.check(window.hits(-3).build());
    owner.cluster().global().flushBroadcasts().join();

    RateLimitResponse r = other.check(window.hits(7).build()).get(0);

    assertThat(r.status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(r.remaining()).isZero();
  }

  @Test
  void queueHits_globalBatchLimitReached_sentWithoutWaitingForTimer() throws Exception {
    ClusterSettings small =
        new ClusterSettings(
            512, SETTINGS.hash(), 1000, SETTINGS.batchWait(), SETTINGS.batchTimeout(), false,
            Duration.ofHours(1), 2, SETTINGS.globalTimeout(), "static", List.of(), true);
    cluster = LocalCluster.start(2, small);
    Node asker = cluster.node(0);
    Node owner = cluster.node(1);
    int sent = 0;
    for (int i = 0; sent < 2; i++) {
      String key = "k" + i;
      if (cluster.ownerOf("g_" + key) == owner) {
        asker.check(
            RateLimitRequest.builder("g", key).hits(1).limit(5).duration(60_000)
                .behavior(Behavior.GLOBAL).build());
        sent++;
      }
    }
    Await.holdsWithin(Duration.ofSeconds(10), () -> owner.callsReceived("GetPeerRateLimits") > 0);
    assertThat(owner.callsReceived("GetPeerRateLimits")).isEqualTo(1);
  }

  @Test
  void leave_globalHitsQueuedDuringShutdown_flushedToOwnerBeforePeerClientsClose() {
    cluster = LocalCluster.start(3, SETTINGS);
    Node owner = cluster.ownerOf("g_acct");
    Node leaving = cluster.nonOwnersOf("g_acct").get(0);
    java.util.concurrent.atomic.AtomicBoolean sent = new java.util.concurrent.atomic.AtomicBoolean();
    cluster.nodes().forEach(
        n ->
            n.beforeAnnounce(
                isLeaving -> {
                  if (isLeaving && sent.compareAndSet(false, true)) {
                    leaving.check(global(2, 10));
                  }
                }));

    leaving.cluster().leave(Duration.ofSeconds(5));

    assertThat(sent).isTrue();
    assertThat(owner.check(global(0, 10)).get(0).remaining()).isEqualTo(8);
  }
}
