package dev.weir.core.cluster.global;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.weir.core.cluster.peer.PeerClient;
import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.cluster.peer.PeerClientSettings;
import dev.weir.core.engine.LeakyBucketState;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.IdlePeerHandler;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.InProcessPeers;
import dev.weir.core.testkit.RingKeys;
import dev.weir.core.testkit.WindowCounterCheck;
import dev.weir.proto.gubernator.Algorithm;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

class GlobalManagerTest {

  private static final String SELF = "self:1";
  private static final String OWNER = "owner:1";
  private static final String NEW_OWNER = "new-owner:1";

  private final FakeClock clock = new FakeClock();
  private final long t0 = clock.wallMillis();
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final InMemoryBucketStore store = new InMemoryBucketStore(clock);
  private final InProcessPeers peers =
      new InProcessPeers(
          new PeerClientSettings(1000, Duration.ofNanos(500_000), Duration.ofSeconds(5), false),
          clock);
  private final List<List<RateLimitRequest>> hitsReceived = peers.checked();
  private final List<List<UpdatePeerGlobal>> globalsReceived = peers.globals();
  private final PeerClientPool pool = new PeerClientPool(peers::client, clock);

  @AfterEach
  void stop() {
    pool.close();
    peers.close();
  }

  private GlobalManager manager(HashRing ring, int batchLimit) {
    return new GlobalManager(
        SELF, () -> ring, pool, new WindowCounterCheck(store), store, scheduler,
        clock, Duration.ofMillis(100), batchLimit, Duration.ofSeconds(5));
  }

  private GlobalManager manager(java.util.function.Supplier<HashRing> ring) {
    return new GlobalManager(
        SELF, ring, pool, new WindowCounterCheck(store), store, scheduler, clock,
        Duration.ofMillis(100), 1000, Duration.ofSeconds(5));
  }

  /** Returns a key whose hash key ({@code g_<key>}) {@code owner} owns on {@code ring}. */
  private static String keyOwnedBy(HashRing ring, String owner) {
    return RingKeys.ownedBy(ring, "g", "k", owner);
  }

  private static HashRing ring(String... peers) {
    return HashRing.of(List.of(peers), 64, PeerHash.FNV1A);
  }

  private static RateLimitRequest hit(String key, long hits, long createdAt) {
    return RateLimitRequest.builder("g", key).hits(hits).limit(10).duration(60_000)
        .behavior(Behavior.GLOBAL).createdAt(createdAt).build();
  }

  @Test
  void queueHits_sameKey_summedAndSentOnceAfterSyncWait() {
    GlobalManager m = manager(ring(OWNER), 1000);
    m.queueHits(hit("a", 2, t0));
    m.queueHits(hit("a", 3, t0 + 1000));
    m.queueHits(hit("a", 0, t0 + 2000));

    scheduler.advance(Duration.ofMillis(99));
    assertThat(hitsReceived).isEmpty();
    scheduler.advance(Duration.ofMillis(1));

    assertThat(hitsReceived).hasSize(1);
    RateLimitRequest sent = hitsReceived.get(0).get(0);
    assertThat(sent.hits()).isEqualTo(5);
    assertThat(sent.createdAt()).as("first request's created_at").isEqualTo(t0);
    assertThat(sent.has(Behavior.GLOBAL)).isTrue();
  }

  @Test
  void queueHits_sumBeyondLongRange_saturatesInsteadOfWrapping() {
    GlobalManager m = manager(ring(OWNER), 1000);
    m.queueHits(hit("a", Long.MAX_VALUE - 1, t0));
    m.queueHits(hit("a", 5, t0));
    m.queueHits(hit("b", Long.MIN_VALUE + 1, t0));
    m.queueHits(hit("b", -5, t0));

    scheduler.advance(Duration.ofMillis(100));

    assertThat(hitsReceived.get(0))
        .extracting(RateLimitRequest::hits)
        .containsExactlyInAnyOrder(Long.MAX_VALUE, Long.MIN_VALUE);
  }

  @Test
  void queueHits_hitsResetHits_resetSentBeforeOnlyTheHitsAfterIt() {
    GlobalManager m = manager(ring(OWNER), 1000);
    m.queueHits(hit("a", 5, t0));
    m.queueHits(hit("a", 0, t0).withBehavior(Behavior.GLOBAL | Behavior.RESET_REMAINING));
    m.queueHits(hit("a", 1, t0));
    m.queueHits(hit("a", 2, t0));

    scheduler.advance(Duration.ofMillis(100));

    assertThat(hitsReceived).hasSize(2);
    assertThat(hitsReceived.get(0)).singleElement()
        .satisfies(r -> assertThat(r.has(Behavior.RESET_REMAINING)).isTrue())
        .satisfies(r -> assertThat(r.hits()).isZero());
    assertThat(hitsReceived.get(1)).singleElement()
        .satisfies(r -> assertThat(r.has(Behavior.RESET_REMAINING)).isFalse())
        .satisfies(r -> assertThat(r.hits()).isEqualTo(3));
  }

  @Test
  void flushHits_whileAnEarlierFlushsResetIsUnanswered_waitsSoNoItemOvertakesIt()
      throws Exception {
    try (HoldingOwner holder = new HoldingOwner()) {
      List<List<RateLimitRequest>> received = holder.received;
      PeerClientPool toOwner = holder.pool;
      HashRing ring = ring(OWNER);
      GlobalManager m =
          new GlobalManager(
              SELF, () -> ring, toOwner, new WindowCounterCheck(store), store, scheduler,
              clock, Duration.ofMillis(100), 1000, Duration.ofSeconds(5));
      RateLimitRequest reset =
          hit("a", 0, t0).withBehavior(Behavior.GLOBAL | Behavior.RESET_REMAINING);
      m.queueHits(reset);
      m.queueHits(hit("a", 2, t0));
      CompletableFuture<Void> first = m.flushHits();
      m.queueHits(reset);
      m.queueHits(hit("a", 1, t0));
      CompletableFuture<Void> second = m.flushHits();
      assertThat(received).as("only the first reset so far").hasSize(1);

      holder.answerAll();
      first.get(5, java.util.concurrent.TimeUnit.SECONDS);
      second.get(5, java.util.concurrent.TimeUnit.SECONDS);

      assertThat(received)
          .as("the hits 2, still held back behind the first reset, are erased by the second")
          .extracting(GlobalManagerTest::firstItem)
          .containsExactly("reset", "reset", "hits 1");
    }
  }

  @Test
  void flushHits_keyComesToBeOwnedHereWhileTheResetIsOut_hitsAfterItNotSentToTheFormerOwner()
      throws Exception {
    try (HoldingOwner holder = new HoldingOwner()) {
      List<List<RateLimitRequest>> received = holder.received;
      List<CompletableFuture<List<RateLimitResponse>>> held = holder.held;
      PeerClientPool toOwner = holder.pool;
      HashRing both = ring(SELF, OWNER);
      java.util.concurrent.atomic.AtomicReference<HashRing> current =
          new java.util.concurrent.atomic.AtomicReference<>(both);
      GlobalManager m =
          new GlobalManager(
              SELF, current::get, toOwner, new WindowCounterCheck(store), store, scheduler,
              clock, Duration.ofMillis(100), 1000, Duration.ofSeconds(5));
      String key = keyOwnedBy(both, OWNER);
      m.queueHits(hit(key, 0, t0).withBehavior(Behavior.GLOBAL | Behavior.RESET_REMAINING));
      m.queueHits(hit(key, 2, t0));
      CompletableFuture<Void> flush = m.flushHits();
      assertThat(received).as("the reset is out").hasSize(1);

      current.set(both.without(OWNER));
      held.get(0).complete(List.of(RateLimitResponse.of(Status.UNDER_LIMIT, 10, 10, 0)));
      scheduler.runDue();
      flush.get(5, java.util.concurrent.TimeUnit.SECONDS);

      assertThat(received).as("the hits after the reset stay here").hasSize(1);
    }
  }

  @Test
  void flushHits_resetOfOneKeyUnanswered_otherKeysHitsSentAtOnceAndTheKeysOwnAfterIt()
      throws Exception {
    try (HoldingOwner holder = new HoldingOwner()) {
      GlobalManager m = holdingManager(holder, ring(OWNER));
      m.queueHits(hit("a", 0, t0).withBehavior(Behavior.GLOBAL | Behavior.RESET_REMAINING));
      m.flushHits();
      m.queueHits(hit("b", 1, t0));
      m.queueHits(hit("a", 2, t0));
      m.flushHits();

      assertThat(holder.keysReceived()).as("b does not wait for a's reset").contains("b");
      assertThat(holder.keysReceived()).as("a's hits wait for its reset").containsOnlyOnce("a");

      holder.answerAll();

      assertThat(holder.keysReceived()).containsExactly("a", "b", "a");
      assertThat(holder.received.get(2).get(0).hits()).isEqualTo(2);
    }
  }

  @Test
  void flushHits_afterTheResetIsAnswered_laterFlushesDoNotWaitForEarlierOnes() throws Exception {
    try (HoldingOwner holder = new HoldingOwner()) {
      GlobalManager m = holdingManager(holder, ring(OWNER));
      m.queueHits(hit("a", 0, t0).withBehavior(Behavior.GLOBAL | Behavior.RESET_REMAINING));
      m.flushHits();
      m.queueHits(hit("b", 1, t0));
      m.flushHits();
      holder.answer(0);
      assertThat(holder.keysReceived()).containsExactly("a", "b");

      m.queueHits(hit("c", 1, t0));
      m.flushHits();

      assertThat(holder.keysReceived())
          .as("c goes out while b's call is still unanswered")
          .containsExactly("a", "b", "c");
    }
  }

  @Test
  void flushHits_resetWhileTheKeysEarlierHitsAreUnanswered_waitsForThem() throws Exception {
    try (HoldingOwner holder = new HoldingOwner()) {
      GlobalManager m = holdingManager(holder, ring(OWNER));
      m.queueHits(hit("a", 2, t0));
      m.flushHits();
      m.queueHits(hit("a", 0, t0).withBehavior(Behavior.GLOBAL | Behavior.RESET_REMAINING));
      m.flushHits();

      assertThat(holder.received)
          .as("the reset does not overtake the hits taken before it")
          .hasSize(1);
      holder.answer(0);
      scheduler.runDue();
      assertThat(holder.received).extracting(GlobalManagerTest::firstItem)
          .containsExactly("hits 2", "reset");
    }
  }

  @Test
  void flushHits_ownerRefusedTheCallUnsent_hitsGoWithTheNextSyncToTheOwnerOfThen()
      throws Exception {
    java.util.concurrent.atomic.AtomicBoolean ownerDown =
        new java.util.concurrent.atomic.AtomicBoolean(true);
    try (HoldingOwner holder = new HoldingOwner(a -> a.equals(OWNER) && ownerDown.get())) {
      java.util.concurrent.atomic.AtomicReference<HashRing> current =
          new java.util.concurrent.atomic.AtomicReference<>(ring(OWNER));
      GlobalManager m = holdingManager(holder, current::get);
      m.queueHits(hit("a", 2, t0));
      m.flushHits().get(5, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(holder.received).isEmpty();

      current.set(ring(NEW_OWNER));
      m.queueHits(hit("a", 3, t0));
      scheduler.advance(Duration.ofMillis(100));

      assertThat(holder.receivers)
          .as("sent again, to the owner of then")
          .containsExactly(NEW_OWNER);
      assertThat(holder.received.get(0)).singleElement()
          .satisfies(r -> assertThat(r.hits()).as("the refused 2 and the 3 since").isEqualTo(5));
      assertThat(m.droppedHits()).isZero();
    }
  }

  @Test
  void flushHits_callFailsAfterTheOwnerLeftTheRing_hitsSentToTheNewOwner() throws Exception {
    try (HoldingOwner holder = new HoldingOwner()) {
      java.util.concurrent.atomic.AtomicReference<HashRing> current =
          new java.util.concurrent.atomic.AtomicReference<>(ring(OWNER));
      GlobalManager m = holdingManager(holder, current::get);
      m.queueHits(hit("a", 2, t0));
      CompletableFuture<Void> flushed = m.flushHits();

      current.set(ring(NEW_OWNER));
      holder.held.get(0).completeExceptionally(new IllegalStateException("owner went away"));
      flushed.get(5, java.util.concurrent.TimeUnit.SECONDS);
      scheduler.advance(Duration.ofMillis(100));

      assertThat(holder.receivers).containsExactly(OWNER, NEW_OWNER);
      assertThat(holder.received.get(1).get(0).hits()).isEqualTo(2);
    }
  }

  @Test
  void flushHits_callFailsWhileTheOwnerIsStillOnTheRing_notSentAgainButCountedDropped()
      throws Exception {
    try (HoldingOwner holder = new HoldingOwner()) {
      GlobalManager m = holdingManager(holder, ring(OWNER));
      m.queueHits(hit("a", 2, t0));
      CompletableFuture<Void> flushed = m.flushHits();

      holder.held.get(0).completeExceptionally(new IllegalStateException("slow owner"));
      flushed.get(5, java.util.concurrent.TimeUnit.SECONDS);
      scheduler.advance(Duration.ofMillis(100));

      assertThat(holder.receivers).as("the owner may have applied them").containsExactly(OWNER);
      assertThat(m.droppedHits()).isEqualTo(1);
      assertThat(m.queuedHits()).isZero();
    }
  }

  @Test
  void flushHits_everyCallFails_eachKindOfWarningLoggedAtMostOncePer10sWithTheSuppressedCount()
      throws Exception {
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    appender.start();
    Logger log = (Logger) LoggerFactory.getLogger(GlobalManager.class);
    log.addAppender(appender);
    try (HoldingOwner holder = new HoldingOwner()) {
      GlobalManager m = holdingManager(holder, ring(OWNER));
      for (int flush = 0; flush < 50; flush++) {
        m.queueHits(hit("k" + flush, 1, t0));
        CompletableFuture<Void> flushed = m.flushHits();
        holder.held.get(flush).completeExceptionally(new IllegalStateException("owner down"));
        flushed.get(5, java.util.concurrent.TimeUnit.SECONDS);
        clock.advance(Duration.ofMillis(20));
      }
      List<String> first = warnings(appender);
      assertThat(first).filteredOn(w -> w.contains("owner down")).hasSize(1);
      assertThat(first).filteredOn(w -> w.startsWith("dropping")).hasSize(1);
      assertThat(first).hasSize(2);

      clock.advance(Duration.ofSeconds(10));
      m.queueHits(hit("late", 1, t0));
      CompletableFuture<Void> flushed = m.flushHits();
      holder.held.get(50).completeExceptionally(new IllegalStateException("owner down"));
      flushed.get(5, java.util.concurrent.TimeUnit.SECONDS);

      assertThat(warnings(appender).subList(2, warnings(appender).size()))
          .hasSize(2)
          .allSatisfy(w -> assertThat(w).endsWith("(suppressed 49 similar lines)"));
    } finally {
      log.detachAppender(appender);
    }
  }

  private static List<String> warnings(ListAppender<ILoggingEvent> appender) {
    return appender.list.stream()
        .filter(e -> e.getLevel() == Level.WARN)
        .map(ILoggingEvent::getFormattedMessage)
        .toList();
  }

  @Test
  void flushHits_ownerAnswersAnItemWithAnError_itemCountedDroppedAndWarnedOthersNot()
      throws Exception {
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    appender.start();
    Logger log = (Logger) LoggerFactory.getLogger(GlobalManager.class);
    log.addAppender(appender);
    try (HoldingOwner holder = new HoldingOwner()) {
      GlobalManager m = holdingManager(holder, ring(OWNER));
      m.queueHits(hit("a", 2, t0));
      m.queueHits(hit("b", 1, t0));
      CompletableFuture<Void> flushed = m.flushHits();

      holder.held.get(0)
          .complete(
              List.of(
                  RateLimitResponse.error("field 'duration' is 60000; refused"),
                  RateLimitResponse.of(Status.UNDER_LIMIT, 10, 9, 0)));
      flushed.get(5, java.util.concurrent.TimeUnit.SECONDS);

      assertThat(m.droppedHits()).isEqualTo(1);
      assertThat(warnings(appender))
          .singleElement()
          .satisfies(w -> assertThat(w).contains(OWNER).contains("g_a").contains("refused"));
    } finally {
      log.detachAppender(appender);
    }
  }

  @Test
  void flushHits_ownerRefusesEveryCall_hitsSentThreeTimesThenDroppedAndCounted()
      throws Exception {
    java.util.concurrent.atomic.AtomicInteger tries =
        new java.util.concurrent.atomic.AtomicInteger();
    try (HoldingOwner holder = new HoldingOwner(a -> tries.incrementAndGet() > 0)) {
      GlobalManager m = holdingManager(holder, ring(OWNER));
      m.queueHits(hit("a", 2, t0));
      m.flushHits().get(5, java.util.concurrent.TimeUnit.SECONDS);
      for (int sync = 0; sync < 4; sync++) {
        scheduler.advance(Duration.ofMillis(100));
      }

      assertThat(tries).hasValue(3);
      assertThat(m.queuedHits()).isZero();
      assertThat(m.droppedHits()).isEqualTo(1);
    }
  }

  @Test
  void flushHits_refusedResetWithHitsHeldBehindIt_bothSentAgainInOrder() throws Exception {
    java.util.concurrent.atomic.AtomicBoolean ownerDown =
        new java.util.concurrent.atomic.AtomicBoolean(true);
    try (HoldingOwner holder = new HoldingOwner(a -> ownerDown.get())) {
      GlobalManager m = holdingManager(holder, ring(OWNER));
      m.queueHits(hit("a", 0, t0).withBehavior(Behavior.GLOBAL | Behavior.RESET_REMAINING));
      m.queueHits(hit("a", 2, t0));
      m.flushHits().get(5, java.util.concurrent.TimeUnit.SECONDS);
      ownerDown.set(false);

      scheduler.advance(Duration.ofMillis(100));
      holder.answerAll();

      assertThat(holder.received).extracting(GlobalManagerTest::firstItem)
          .containsExactly("reset", "hits 2");
    }
  }

  @Test
  void flushHits_keyHeldBackAgainAfterEachCall_flushCompletesOnceItsCallsAndHeldItemsEnded()
      throws Exception {
    try (HoldingOwner holder = new HoldingOwner()) {
      GlobalManager m = holdingManager(holder, ring(OWNER));
      RateLimitRequest reset =
          hit("a", 0, t0).withBehavior(Behavior.GLOBAL | Behavior.RESET_REMAINING);
      m.queueHits(reset);
      m.queueHits(hit("a", 2, t0));
      CompletableFuture<Void> f = m.flushHits();
      assertThat(holder.received).as("the reset is out, the hits 2 held back").hasSize(1);

      holder.answer(0);
      scheduler.runDue();
      assertThat(holder.received).as("the hits 2 go once the reset ended").hasSize(2);
      m.queueHits(reset);
      CompletableFuture<Void> g = m.flushHits();
      assertThat(f).as("the hits 2 f held back are still out").isNotDone();

      holder.answer(1);
      assertThat(f).as("its reset and the hits 2 held back at its start ended").isDone();
      for (int call = 2; call < 6; call++) {
        scheduler.runDue();
        assertThat(holder.received).hasSize(call + 1);
        m.queueHits(call % 2 == 0 ? hit("a", call, t0) : reset);
        m.flushHits();
        holder.answer(call);
      }
      assertThat(g).isDone();
    }
  }

  @Test
  void flushHits_newHitsJoinHitsSentAgain_newHitsKeepTheirSends() throws Exception {
    java.util.concurrent.atomic.AtomicInteger tries =
        new java.util.concurrent.atomic.AtomicInteger();
    try (HoldingOwner holder = new HoldingOwner(a -> tries.incrementAndGet() <= 3)) {
      GlobalManager m = holdingManager(holder, ring(OWNER));
      m.queueHits(hit("a", 1, t0));
      m.flushHits().get(5, java.util.concurrent.TimeUnit.SECONDS);
      m.flushHits().get(5, java.util.concurrent.TimeUnit.SECONDS);
      m.queueHits(hit("a", 3, t0));
      m.flushHits().get(5, java.util.concurrent.TimeUnit.SECONDS);
      m.flushHits();

      assertThat(tries).as("three refusals, then a call").hasValue(4);
      assertThat(holder.received).singleElement()
          .satisfies(b -> assertThat(b.get(0).hits()).as("the hits 1 and 3").isEqualTo(4));
    }
  }

  private GlobalManager holdingManager(HoldingOwner holder, HashRing ring) {
    return holdingManager(holder, () -> ring);
  }

  private GlobalManager holdingManager(
      HoldingOwner holder, java.util.function.Supplier<HashRing> ring) {
    return new GlobalManager(
        SELF, ring, holder.pool, new WindowCounterCheck(store), store, scheduler, clock,
        Duration.ofMillis(100), 1000, Duration.ofSeconds(5));
  }

  private static String firstItem(List<RateLimitRequest> batch) {
    RateLimitRequest r = batch.get(0);
    return r.has(Behavior.RESET_REMAINING) ? "reset" : "hits " + r.hits();
  }

  @Test
  void queueHits_batchLimitKeys_sentAtOnce() {
    GlobalManager m = manager(ring(OWNER), 2);
    m.queueHits(hit("a", 1, t0));
    assertThat(hitsReceived).isEmpty();
    m.queueHits(hit("b", 1, t0));
    assertThat(hitsReceived).hasSize(1);
    assertThat(hitsReceived.get(0)).hasSize(2);
    assertThat(scheduler.pending()).isZero();
  }

  @Test
  void queueBroadcast_afterSyncWait_exactStateSentToEveryOtherPeer() {
    HashRing ring = ring(SELF, OWNER, "third:1");
    GlobalManager m = manager(ring, 1000);
    String key = keyOwnedBy(ring, SELF);
    RateLimitRequest r = hit(key, 4, clock.wallMillis());
    new WindowCounterCheck(store).decide(r);
    m.queueBroadcast(r);

    scheduler.advance(Duration.ofMillis(100));

    assertThat(globalsReceived).hasSize(2);
    UpdatePeerGlobal u = globalsReceived.get(0).get(0);
    assertThat(u.getKey()).isEqualTo("g_" + key);
    assertThat(u.getStatus().getRemaining()).isEqualTo(6);
    assertThat(u.getCreatedAt()).as("the owner's time of the flush").isEqualTo(t0 + 100);
    assertThat(u.getDuration()).isEqualTo(60_000);
    assertThat(u.hasWeirState()).isTrue();
  }

  @Test
  void apply_gubernatorStyleTokenUpdate_rebuiltExpiringOneAfterResetTime() {
    GlobalManager m = manager(ring(SELF, OWNER), 1000);
    String key = "g_" + keyOwnedBy(ring(SELF, OWNER), OWNER);
    long reset = clock.wallMillis() + 30_000;
    m.apply(
        List.of(
            UpdatePeerGlobal.newBuilder()
                .setKey(key)
                .setAlgorithm(Algorithm.TOKEN_BUCKET)
                .setDuration(60_000)
                .setCreatedAt(clock.wallMillis() - 30_000)
                .setStatus(
                    RateLimitResp.newBuilder().setLimit(10).setRemaining(3).setResetTime(reset))
                .build()));
    assertThat(store.get(key))
        .contains(
            new TokenBucketState(
                Status.UNDER_LIMIT, 10, 60_000, 3, clock.wallMillis() - 30_000, reset + 1));
    assertThat(RateLimitEngine.tokenBucketResetTime((TokenBucketState) store.get(key).get()))
        .as("the copy reports the owner's reset_time")
        .isEqualTo(reset);
  }

  @Test
  void apply_gubernatorStyleLeakyUpdate_rebuiltExpiringOneAfterResetTime() {
    GlobalManager m = manager(ring(SELF, OWNER), 1000);
    String key = "g_" + keyOwnedBy(ring(SELF, OWNER), OWNER);
    long reset = clock.wallMillis() + 30_000;
    m.apply(
        List.of(
            UpdatePeerGlobal.newBuilder()
                .setKey(key)
                .setAlgorithm(Algorithm.LEAKY_BUCKET)
                .setDuration(60_000)
                .setCreatedAt(clock.wallMillis())
                .setStatus(
                    RateLimitResp.newBuilder().setLimit(10).setRemaining(4).setResetTime(reset))
                .build()));
    assertThat(store.get(key))
        .contains(new LeakyBucketState(10, 60_000, 10, 4, clock.wallMillis(), reset + 1));
  }

  @Test
  void flushHits_thisNodeBecameOwner_hitsNotAppliedAgainButBroadcast() {
    HashRing before = ring(SELF, OWNER, "third:1");
    String key = keyOwnedBy(before, OWNER);
    HashRing after = ring(SELF, "third:1");
    assertThat(after.ownerOf("g_" + key)).isEqualTo(SELF);
    java.util.concurrent.atomic.AtomicReference<HashRing> current =
        new java.util.concurrent.atomic.AtomicReference<>(before);
    GlobalManager m = manager(current::get);
    RateLimitRequest r = hit(key, 4, clock.wallMillis());
    new WindowCounterCheck(store).decide(r);
    m.queueHits(r);
    current.set(after);

    m.flushHits().join();
    assertThat(((TokenBucketState) store.get("g_" + key).orElseThrow()).remaining())
        .as("the 4 hits count once")
        .isEqualTo(6);
    assertThat(hitsReceived).isEmpty();
    scheduler.advance(Duration.ofMillis(100));

    assertThat(globalsReceived).hasSize(1);
    assertThat(globalsReceived.get(0).get(0).getStatus().getRemaining()).isEqualTo(6);
  }

  @Test
  void flushHits_aFlushWithAResetThrows_laterFlushesStillSend() throws Exception {
    HashRing before = ring(SELF, OWNER);
    HashRing after = ring(SELF);
    String key = keyOwnedBy(before, OWNER);
    java.util.concurrent.atomic.AtomicReference<HashRing> current =
        new java.util.concurrent.atomic.AtomicReference<>(before);
    java.util.concurrent.atomic.AtomicBoolean closing =
        new java.util.concurrent.atomic.AtomicBoolean();
    dev.weir.core.time.Scheduler rejecting =
        (task, delay) -> {
          if (closing.get()) {
            throw new java.util.concurrent.RejectedExecutionException("scheduler closed");
          }
          return scheduler.schedule(task, delay);
        };
    GlobalManager m =
        new GlobalManager(
            SELF, current::get, pool, new WindowCounterCheck(store), store, rejecting, clock,
            Duration.ofMillis(100), 1000, Duration.ofSeconds(5));
    m.queueHits(
        RateLimitRequest.builder("g", key).hits(0).limit(10).duration(60_000)
            .behavior(Behavior.GLOBAL | Behavior.RESET_REMAINING).createdAt(t0).build());
    current.set(after); // this node now owns the key: the reset is queued for broadcast
    closing.set(true);

    org.assertj.core.api.Assertions.catchThrowable(() -> m.flushHits().join());
    closing.set(false);
    current.set(before);
    m.queueHits(hit(key, 2, t0));

    m.flushHits().get(2, java.util.concurrent.TimeUnit.SECONDS);
    assertThat(hitsReceived).hasSize(1);
    assertThat(hitsReceived.get(0).get(0).hits()).isEqualTo(2);
  }

  @Test
  void flushHits_becameOwnerAfterOwnersBroadcastOverwroteCopy_queuedHitsStillCount() {
    HashRing before = ring(SELF, OWNER, "third:1");
    String key = keyOwnedBy(before, OWNER);
    HashRing after = ring(SELF, "third:1");
    assertThat(after.ownerOf("g_" + key)).isEqualTo(SELF);
    java.util.concurrent.atomic.AtomicReference<HashRing> current =
        new java.util.concurrent.atomic.AtomicReference<>(before);
    GlobalManager m = manager(current::get);
    RateLimitRequest r = hit(key, 4, clock.wallMillis());
    new WindowCounterCheck(store).decide(r); // answered from the local copy: 6 left
    m.queueHits(r);
    // The owner's broadcast (2 hits taken elsewhere, ours not sent yet) overwrites the copy.
    m.apply(
        List.of(
            UpdatePeerGlobal.newBuilder()
                .setKey("g_" + key)
                .setAlgorithm(Algorithm.TOKEN_BUCKET)
                .setDuration(60_000)
                .setCreatedAt(t0)
                .setStatus(
                    RateLimitResp.newBuilder().setLimit(10).setRemaining(8)
                        .setResetTime(t0 + 60_000))
                .build()));
    current.set(after); // the owner left: this node owns the key now

    m.flushHits().join();

    assertThat(((TokenBucketState) store.get("g_" + key).orElseThrow()).remaining())
        .as("2 hits elsewhere + our 4")
        .isEqualTo(4);
  }

  @Test
  void apply_lateBroadcastForKeyThisNodeNowOwns_ignored() {
    HashRing now = ring(SELF, "third:1");
    String key = keyOwnedBy(now, SELF);
    GlobalManager m = manager(() -> now);
    RateLimitRequest r = hit(key, 4, clock.wallMillis());
    new WindowCounterCheck(store).decide(r);
    TokenBucketState mine = (TokenBucketState) store.get("g_" + key).orElseThrow();

    m.apply(
        List.of(
            UpdatePeerGlobal.newBuilder()
                .setKey("g_" + key)
                .setAlgorithm(Algorithm.TOKEN_BUCKET)
                .setDuration(60_000)
                .setCreatedAt(clock.wallMillis())
                .setStatus(
                    RateLimitResp.newBuilder()
                        .setLimit(10)
                        .setRemaining(9)
                        .setResetTime(clock.wallMillis() + 60_000))
                .build()));

    assertThat(store.get("g_" + key)).contains(mine);
  }

  @Test
  void flushBroadcasts_keyOwnedElsewhereByThen_notBroadcastOverItsNewOwnersState() {
    HashRing before = ring(SELF, OWNER, "third:1");
    java.util.concurrent.atomic.AtomicReference<HashRing> current =
        new java.util.concurrent.atomic.AtomicReference<>(before);
    GlobalManager m = manager(current::get);
    String moving = keyOwnedBy(before, SELF);
    RateLimitRequest r = hit(moving, 4, clock.wallMillis());
    new WindowCounterCheck(store).decide(r);
    m.queueBroadcast(r);
    current.set(before.without(SELF));

    m.flushBroadcasts().join();

    assertThat(globalsReceived).as("the copy here is no longer the owner's").isEmpty();
  }

  @Test
  void flushBroadcasts_onePeerDownOneUp_reportedAsOneFailedBroadcast() {
    String down = "down:1";
    PeerClientPool mixed =
        new PeerClientPool(
            address ->
                address.equals(down)
                    ? new dev.weir.core.cluster.peer.PeerClient(
                        address,
                        io.grpc.inprocess.InProcessChannelBuilder.forName(
                                io.grpc.inprocess.InProcessServerBuilder.generateName())
                            .directExecutor()
                            .build(),
                        new PeerClientSettings(
                            1000, Duration.ofNanos(500_000), Duration.ofSeconds(5), false),
                        scheduler,
                        clock)
                    : peers.client(address),
            clock);
    HashRing ring = ring(SELF, OWNER, down);
    GlobalManager m =
        new GlobalManager(
            SELF, () -> ring, mixed, new WindowCounterCheck(store), store, scheduler, clock,
            Duration.ofMillis(100), 1000, Duration.ofSeconds(5));
    dev.weir.core.testkit.RecordingMetrics metrics = new dev.weir.core.testkit.RecordingMetrics();
    m.reportTo(metrics);
    m.queueBroadcast(hit(keyOwnedBy(ring, SELF), 1, t0));

    m.flushBroadcasts().join();

    assertThat(globalsReceived).hasSize(1);
    assertThat(metrics.events()).containsExactly("global broadcast failed");
    mixed.close();
  }

  @Test
  void oneNodeCluster_hitsAndBroadcastsOfItsOwnKeys_noPeerCalled_noSendOrBroadcastRecorded() {
    HashRing ring = ring(SELF);
    GlobalManager m = manager(ring, 1000);
    dev.weir.core.testkit.RecordingMetrics metrics = new dev.weir.core.testkit.RecordingMetrics();
    m.reportTo(metrics);
    m.queueHits(hit("a", 1, t0));
    m.queueBroadcast(hit("b", 1, t0));

    m.flushHits().join();
    m.flushBroadcasts().join();

    assertThat(hitsReceived).isEmpty();
    assertThat(globalsReceived).isEmpty();
    assertThat(metrics.events()).as("no call was made").isEmpty();
  }

  @Test
  void flushHits_someToAnOwnerSomeOwnedHere_oneSendRecorded() {
    HashRing ring = ring(SELF, OWNER);
    GlobalManager m = manager(ring, 1000);
    dev.weir.core.testkit.RecordingMetrics metrics = new dev.weir.core.testkit.RecordingMetrics();
    m.reportTo(metrics);
    m.queueHits(hit(keyOwnedBy(ring, OWNER), 1, t0));
    m.queueHits(hit(keyOwnedBy(ring, SELF), 1, t0));

    m.flushHits().join();

    assertThat(hitsReceived).hasSize(1);
    assertThat(metrics.events()).contains("global send ok").doesNotContain("global send failed");
    assertThat(metrics.count("global send ok")).isOne();
  }

  @Test
  void flushHits_ringEmptiedByLeaving_dropsTheHitsWithoutThrowing() {
    java.util.concurrent.atomic.AtomicReference<HashRing> current =
        new java.util.concurrent.atomic.AtomicReference<>(ring(SELF, OWNER));
    GlobalManager global = manager(current::get);
    global.queueHits(hit(keyOwnedBy(current.get(), OWNER), 1, t0));
    current.set(ring());

    var flushed = global.flushHits();

    assertThat(flushed).isCompleted();
    assertThat(global.queuedHits()).isZero();
    assertThat(hitsReceived).isEmpty();
  }

  /**
   * A peer that records every forwarded batch and holds its answer until the test completes it,
   * and the pool whose clients call it, whatever the address.
   */
  private final class HoldingOwner implements AutoCloseable {
    final List<List<RateLimitRequest>> received = new CopyOnWriteArrayList<>();
    final List<String> receivers = new CopyOnWriteArrayList<>();
    final List<CompletableFuture<List<RateLimitResponse>>> held = new CopyOnWriteArrayList<>();
    final PeerClientPool pool;

    HoldingOwner() {
      this(address -> false);
    }

    /** Makes a pool that refuses, unsent, the calls to the peers {@code refused} names. */
    HoldingOwner(java.util.function.Predicate<String> refused) {
      pool =
          new PeerClientPool(
              address -> peers.client(address, holding(address), scheduler),
              new dev.weir.core.cluster.peer.PeerLiveness(clock),
              refused);
    }

    private IdlePeerHandler holding(String address) {
      return new IdlePeerHandler() {
        @Override
        public CompletableFuture<List<RateLimitResponse>> answerForwarded(
            List<RateLimitRequest> requests) {
          received.add(requests);
          receivers.add(address);
          CompletableFuture<List<RateLimitResponse>> answer = new CompletableFuture<>();
          held.add(answer);
          return answer;
        }
      };
    }

    /** Returns the unique key of every item received, in order. */
    List<String> keysReceived() {
      return received.stream().flatMap(List::stream).map(RateLimitRequest::uniqueKey).toList();
    }

    /** Answers the {@code i}th call received, every item UNDER_LIMIT. */
    void answer(int i) {
      held.get(i)
          .complete(
              received.get(i).stream()
                  .map(r -> RateLimitResponse.of(Status.UNDER_LIMIT, 10, 9, 0))
                  .toList());
    }

    /** Answers every call, those that answering lets out (sent on the scheduler) included. */
    void answerAll() {
      for (int i = 0; i < held.size(); i++) {
        if (!held.get(i).isDone()) {
          answer(i);
        }
        scheduler.runDue();
      }
    }

    @Override
    public void close() {
      pool.close();
    }
  }
}
