package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.weir.core.cluster.peer.PeerFailureMode;
import dev.weir.core.cluster.peer.PeerInputValidator;
import dev.weir.core.cluster.snapshot.SnapshotDirectory;
import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.Status;
import dev.weir.core.store.BucketStore;
import dev.weir.core.store.ClockBucketStore;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.ForwardingBucketStore;
import dev.weir.core.testkit.FreePorts;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.testkit.LocalCluster.Node;
import dev.weir.core.time.Clock;
import dev.weir.core.time.ExecutorScheduler;
import dev.weir.ring.HashRing;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.slf4j.LoggerFactory;

/**
 * Counts that survive a full restart ({@code WEIR_SNAPSHOT_DIR}): every node of a {@link
 * LocalCluster} stops gracefully, a new cluster (new addresses, as rescheduled pods get) starts on
 * the same directory, and every key's remaining reflects the hits taken before.
 */
class ClusterSnapshotTest {

  private static final int KEYS = 60;
  private static final long WINDOW = 600_000;
  private static final List<String> KEY_NAMES =
      new Random(17).longs(KEYS).mapToObj(Long::toHexString).toList();

  @TempDir Path dir;

  private final FakeClock clock = new FakeClock();
  private final FakeScheduler timers = new FakeScheduler(clock);
  private final RateLimitEngine engine = new RateLimitEngine(ZoneOffset.UTC);
  private LocalCluster cluster;
  private final List<ClusterNode> restoring = new ArrayList<>();
  private final ExecutorScheduler restoringTimers = new ExecutorScheduler("snapshot-test", 1);
  private ListAppender<ILoggingEvent> appender;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
    restoring.forEach(ClusterNode::close);
    restoringTimers.close();
    if (appender != null) {
      ((Logger) LoggerFactory.getLogger(ClusterNode.class)).detachAppender(appender);
    }
  }

  private LocalCluster start(int nodes) {
    return LocalCluster.start(
        nodes,
        ClusterForwardingTest.SETTINGS.withSnapshotDir(Optional.of(dir)),
        clock,
        store -> new LocalLimiter(engine, store, clock)::decide);
  }

  private static RateLimitRequest req(int i, long hits) {
    return RateLimitRequest.builder("h", KEY_NAMES.get(i))
        .hits(hits)
        .limit(10)
        .duration(WINDOW)
        .build();
  }

  private void hitEveryKey(Node asked, long hits) {
    for (int i = 0; i < KEYS; i++) {
      assertThat(asked.check(req(i, hits)).get(0).error()).isEmpty();
    }
  }

  private List<Long> remainingAsked(Node asked) {
    List<Long> out = new ArrayList<>();
    for (int i = 0; i < KEYS; i++) {
      out.add(asked.check(req(i, 0)).get(0).remaining());
    }
    return out;
  }

  private List<String> files(String glob) throws IOException {
    List<String> out = new ArrayList<>();
    try (Stream<Path> all = Files.list(dir)) {
      all.map(p -> p.getFileName().toString()).filter(name -> name.matches(glob)).forEach(out::add);
    }
    return out;
  }

  private void restart(int nodes) {
    cluster.stopAll();
    cluster.close();
    cluster = start(nodes);
  }

  /**
   * Takes 3 hits on every key of a two-node cluster, stops it, and starts in its place one node in
   * fail mode, on {@link #timers}, whose discovery also lists an owner not started yet; returns
   * that owner's address.
   */
  private String restartAloneBesideALateOwner() throws IOException {
    cluster = start(2);
    hitEveryKey(cluster.node(0), 3);
    cluster.stopAll();
    cluster.close();
    String late = "127.0.0.1:" + FreePorts.next();
    cluster =
        LocalCluster.startInFakeTime(
            1,
            ClusterForwardingTest.SETTINGS
                .withSnapshotDir(Optional.of(dir))
                .withPeerFailureMode(PeerFailureMode.FAIL),
            clock,
            timers,
            late);
    return late;
  }

  @ParameterizedTest(name = "3 nodes, then {0}")
  @ValueSource(ints = {3, 1, 2, 5})
  void fullRestart_countsSurvive_whateverTheNumberOfNodes(int after) throws IOException {
    cluster = start(3);
    hitEveryKey(cluster.node(1), 3);

    cluster.stopAll();
    assertThat(files(".*\\.weirsnap")).hasSize(3);
    cluster.close();
    cluster = start(after);

    for (Node asked : cluster.nodes()) {
      assertThat(remainingAsked(asked)).as("asked %s", asked.address()).containsOnly(7L);
    }
    assertThat(files(".*\\.weirsnap.*")).as("consumed files are deleted").isEmpty();
  }

  /**
   * Hand-off off ({@code WEIR_HANDOFF=false}) stops transfers between running nodes, not the
   * snapshots a user asked for with {@code WEIR_SNAPSHOT_DIR}: restored buckets still reach their
   * owners, so every count survives a full restart.
   */
  @Test
  void handOffOff_fullRestart_countsStillSurvive() {
    ClusterSettings noHandOff =
        ClusterForwardingTest.SETTINGS.withSnapshotDir(Optional.of(dir)).withHandoff(false);
    cluster =
        LocalCluster.start(
            3, noHandOff, clock, store -> new LocalLimiter(engine, store, clock)::decide);
    hitEveryKey(cluster.node(1), 3);
    cluster.stopAll();
    cluster.close();

    cluster =
        LocalCluster.start(
            3, noHandOff, clock, store -> new LocalLimiter(engine, store, clock)::decide);

    for (Node asked : cluster.nodes()) {
      assertThat(remainingAsked(asked)).as("asked %s", asked.address()).containsOnly(7L);
    }
  }

  /**
   * Writes the snapshot of {@code writer} with {@code buckets} token buckets of limit 200 (or
   * {@code buckets} when more) and duration {@link #WINDOW}, the {@code i}th with {@code i + 1}
   * hits; returns their states by key.
   */
  private Map<String, BucketState> savedBy(String writer, int buckets) throws IOException {
    return savedBy(writer, buckets, WINDOW);
  }

  /** Writes a snapshot as {@link #savedBy(String, int)} does, of buckets lasting {@code window}. */
  private Map<String, BucketState> savedBy(String writer, int buckets, long window)
      throws IOException {
    InMemoryBucketStore store = new InMemoryBucketStore(clock);
    long now = clock.wallMillis();
    long limit = Math.max(200, buckets);
    for (int i = 0; i < buckets; i++) {
      store.put(
          "h_" + writer + "/" + i,
          new TokenBucketState(
              Status.UNDER_LIMIT, limit, window, limit - 1 - i, now, now + window));
    }
    new SnapshotDirectory(dir, writer, new PeerInputValidator(InputLimits.DEFAULTS, writer), clock)
        .save(store);
    return contents(store);
  }

  /** Returns the buckets {@code store} holds, by key. */
  private static Map<String, BucketState> contents(BucketStore store) {
    Map<String, BucketState> held = new HashMap<>();
    store.forEach(held::put);
    return held;
  }

  /** Returns a member {@code self} on {@link #dir} over {@code store}, not joined. */
  private ClusterNode restoringNode(String self, BucketStore store) {
    return restoringNode(self, store, clock);
  }

  /** Returns a member as {@link #restoringNode(String, BucketStore)} does, on {@code clock}. */
  private ClusterNode restoringNode(String self, BucketStore store, Clock clock) {
    ClusterNode node =
        new ClusterNode(
            self,
            ClusterForwardingTest.SETTINGS,
            store,
            new LocalLimiter(engine, store, clock)::decide,
            restoringTimers,
            clock,
            null);
    restoring.add(node);
    node.useSnapshots(
        new SnapshotDirectory(
            dir, self, new PeerInputValidator(InputLimits.DEFAULTS, self), clock));
    return node;
  }

  private List<String> logged(Level level) {
    return appender.list.stream()
        .filter(e -> e.getLevel() == level)
        .map(ILoggingEvent::getFormattedMessage)
        .toList();
  }

  private void recordLog() {
    appender = new ListAppender<>();
    appender.start();
    Logger log = (Logger) LoggerFactory.getLogger(ClusterNode.class);
    log.addAppender(appender);
    log.setLevel(Level.INFO);
  }

  /**
   * Three nodes sharing one directory, each with a cache of 50 buckets, start one after the other
   * on three files of 40: each claims one file, its own first, and leaves the others to the nodes
   * that start after it, so every bucket is in a store as it was saved.
   */
  @Test
  void sharedDirectory_filesBeyondTheCache_areLeftForTheNodesThatStartNext() throws IOException {
    Map<String, BucketState> saved = new HashMap<>();
    for (String writer : List.of("10.0.0.1:1051", "10.0.0.2:1051", "10.0.0.3:1051")) {
      saved.putAll(savedBy(writer, 40));
    }
    List<BucketStore> stores = new ArrayList<>();
    List<Integer> restored = new ArrayList<>();
    List<List<String>> left = new ArrayList<>();

    for (String self : List.of("10.0.0.3:1051", "10.0.0.8:1051", "10.0.0.9:1051")) {
      BucketStore store = new ClockBucketStore(clock, 50);
      stores.add(store);
      restored.add(restoringNode(self, store).restoreSnapshots());
      left.add(files(".*\\.weirsnap.*").stream().sorted().toList());
    }

    assertThat(restored).as("live buckets each node kept").containsExactly(40, 40, 40);
    assertThat(left)
        .as("files left after each start: its own file first, then the others in name order")
        .containsExactly(
            List.of("10.0.0.1_1051.weirsnap", "10.0.0.2_1051.weirsnap"),
            List.of("10.0.0.2_1051.weirsnap"),
            List.of());
    Map<String, BucketState> held = new HashMap<>();
    stores.forEach(store -> store.forEach(held::put));
    assertThat(held).isEqualTo(saved);
  }

  /**
   * A file left because its buckets did not fit the cache of the node that started is taken by the
   * next start once they have expired, though its header still declares them: only live buckets
   * count toward the cache.
   */
  @Test
  void leftFile_allItsBucketsExpired_isConsumedByTheNextStart() throws IOException {
    savedBy("10.0.0.1:1051", 40, 60_000);
    savedBy("10.0.0.3:1051", 40, 60_000);
    assertThat(restoringNode("10.0.0.1:1051", new ClockBucketStore(clock, 50)).restoreSnapshots())
        .isEqualTo(40);
    assertThat(files(".*\\.weirsnap.*")).containsExactly("10.0.0.3_1051.weirsnap");

    clock.advance(Duration.ofMinutes(2));
    Map<String, BucketState> saved = savedBy("10.0.0.1:1051", 40);
    ClockBucketStore store = new ClockBucketStore(clock, 50);
    int restored = restoringNode("10.0.0.1:1051", store).restoreSnapshots();

    assertThat(files(".*\\.weirsnap.*"))
        .as("the file of expired buckets is consumed, not left again")
        .isEmpty();
    assertThat(restored).isEqualTo(40);
    Map<String, BucketState> held = contents(store);
    assertThat(held).isEqualTo(saved);
  }

  /**
   * A node whose one file holds more live buckets than its cache keeps the most consumed ones that
   * fit, logs at WARN how many it dropped and why, and counts in its INFO line only those it kept.
   */
  @Test
  void oneFileWithMoreLiveBucketsThanTheCache_keepsTheMostConsumedAndSaysHowManyItDropped()
      throws IOException {
    Map<String, BucketState> saved = savedBy("10.0.0.1:1051", 150);
    ClockBucketStore store = new ClockBucketStore(clock, 100);
    recordLog();

    int restored = restoringNode("10.0.0.1:1051", store).restoreSnapshots();

    assertThat(restored).isEqualTo(100);
    Map<String, BucketState> held = contents(store);
    Map<String, BucketState> mostConsumed = new HashMap<>();
    for (int i = 50; i < 150; i++) {
      String key = "h_10.0.0.1:1051/" + i;
      mostConsumed.put(key, saved.get(key));
    }
    assertThat(held).as("the 100 buckets with the most hits").isEqualTo(mostConsumed);
    assertThat(logged(Level.WARN))
        .singleElement()
        .asString()
        .contains(
            "dropped 50 of the 150 live buckets",
            "WEIR_CACHE_SIZE=100, holds 100 of them",
            "at least 199 to restore them all (more than the 150");
    assertThat(logged(Level.INFO)).anyMatch(m -> m.startsWith("restored 100 live buckets of 150"));
  }

  /**
   * A file of twice as many live buckets as a cache of 64 segments of 100 fills every segment with
   * the most consumed of its keys: the store is full, the half of the file most consumed (which no
   * segment's share overflows) is all held, each key dropped above a held one found its segment
   * full, and what the node returns and logs is what the store holds.
   */
  @Test
  void oneFileOfTwiceTheCache_segmentedStore_keepsTheMostConsumedAndCountsWhatTheStoreHolds()
      throws IOException {
    Map<String, BucketState> saved = savedBy("10.0.0.1:1051", 12_800);
    ClockBucketStore store = new ClockBucketStore(clock, 6_400);
    recordLog();

    int restored = restoringNode("10.0.0.1:1051", store).restoreSnapshots();

    Map<String, BucketState> held = contents(store);
    assertThat(restored).as("restored, as the store holds them").isEqualTo(held.size());
    assertThat(held.size())
        .as("each of the 64 segments has more than its 100 among 12800 keys: all are full")
        .isEqualTo(6_400);
    List<Integer> topDropped = new ArrayList<>();
    int lowestHeld = 12_800;
    for (int i = 0; i < 12_800; i++) {
      String key = "h_10.0.0.1:1051/" + i;
      if (held.containsKey(key)) {
        lowestHeld = Math.min(lowestHeld, i);
      } else if (i >= 12_800 - 3_200) {
        topDropped.add(i);
      }
    }
    assertThat(topDropped).as("dropped among the 3200 most consumed").isEmpty();
    List<Integer> droppedWithRoom = new ArrayList<>();
    for (int i = lowestHeld + 1; i < 12_800; i++) {
      String key = "h_10.0.0.1:1051/" + i;
      if (!held.containsKey(key) && store.hasRoomFor(key)) {
        droppedWithRoom.add(i);
      }
    }
    assertThat(droppedWithRoom)
        .as("dropped above the least consumed held (%d) though its segment has room", lowestHeld)
        .isEmpty();
    assertThat(saved).containsAllEntriesOf(held);
    assertThat(logged(Level.WARN))
        .singleElement()
        .asString()
        .contains(
            "dropped 6400 of the 12800 live buckets",
            "WEIR_CACHE_SIZE=6400, holds 6400 of them",
            "at least 16392 to restore them all (more than the 12800");
    assertThat(logged(Level.INFO))
        .anyMatch(m -> m.startsWith("restored 6400 live buckets of 12800"));
  }

  /**
   * Two files of 3200 live buckets into a cache of 64 segments of 100: the second file does not
   * fit beside the first with the slack the segments need, so it is left for the next node rather
   * than claimed, deleted and partly dropped.
   */
  @Test
  void secondFile_fitsTheCapacityButNotTheSegmentsSlack_isLeftForTheNextNode() throws IOException {
    Map<String, BucketState> own = savedBy("10.0.0.1:1051", 3_200);
    savedBy("10.0.0.3:1051", 3_200);
    ClockBucketStore store = new ClockBucketStore(clock, 6_400);
    recordLog();

    int restored = restoringNode("10.0.0.1:1051", store).restoreSnapshots();

    assertThat(files(".*\\.weirsnap.*")).containsExactly("10.0.0.3_1051.weirsnap");
    assertThat(restored).isEqualTo(3_200);
    Map<String, BucketState> held = contents(store);
    assertThat(held).isEqualTo(own);
    assertThat(logged(Level.WARN)).isEmpty();
  }

  /**
   * Writes the snapshot of {@code writer} with 100 token buckets lasting {@link #WINDOW} and 100
   * lasting {@code shortMillis}, each with one hit.
   */
  private void savedWithShortLived(String writer, long shortMillis) throws IOException {
    InMemoryBucketStore store = new InMemoryBucketStore(clock);
    long now = clock.wallMillis();
    for (int i = 0; i < 200; i++) {
      long window = i % 2 == 0 ? WINDOW : shortMillis;
      store.put(
          "h_" + writer + "/" + i,
          new TokenBucketState(Status.UNDER_LIMIT, 200, window, 199, now, now + window));
    }
    new SnapshotDirectory(dir, writer, new PeerInputValidator(InputLimits.DEFAULTS, writer), clock)
        .save(store);
  }

  /** Returns a clock over {@link #clock} whose every wall-time reading advances it by 1 ms. */
  private Clock ticking() {
    return new Clock() {
      @Override
      public long wallMillis() {
        clock.advanceMillis(1);
        return clock.wallMillis();
      }

      @Override
      public long monotonicNanos() {
        return clock.monotonicNanos();
      }
    };
  }

  /**
   * Buckets that expire while the files load are not dropped for want of room: a cache with room
   * for all of them logs no WARN about its size.
   */
  @Test
  void bucketsExpiringDuringTheLoad_areNotCountedAsDroppedForRoom() throws IOException {
    savedWithShortLived("10.0.0.1:1051", 100);
    Clock ticking = ticking();
    ClockBucketStore store = new ClockBucketStore(ticking, 400);
    recordLog();

    int restored = restoringNode("10.0.0.1:1051", store, ticking).restoreSnapshots();

    assertThat(restored).isGreaterThanOrEqualTo(100);
    assertThat(logged(Level.WARN)).isEmpty();
  }

  /**
   * An unbounded store (capacity Long.MAX_VALUE) never drops a bucket for room, so it logs no
   * WARN and no advised size, however many buckets expire during the load.
   */
  @Test
  void unboundedStore_bucketsExpiringDuringTheLoad_noWarnNoNegativeAdvice() throws IOException {
    savedWithShortLived("10.0.0.1:1051", 100);
    Clock ticking = ticking();
    InMemoryBucketStore store = new InMemoryBucketStore(ticking);
    recordLog();

    int restored = restoringNode("10.0.0.1:1051", store, ticking).restoreSnapshots();

    assertThat(restored).isGreaterThanOrEqualTo(100);
    assertThat(logged(Level.WARN)).noneMatch(m -> m.matches("(?s).*-\\d.*")).isEmpty();
  }

  /**
   * A hand-over of the restored buckets that throws before sending (its store read fails), first on
   * the joining thread, then on the scheduler's, fails as a send that reached no owner would: the
   * keys stay held, the first attempt's future completes and the retries go on.
   */
  @Test
  void handOverRestored_throwsBeforeSending_keysStayHeldAndTheRetriesGoOn() throws IOException {
    savedBy("10.0.0.9:1051", 5);
    AtomicBoolean readsFail = new AtomicBoolean();
    BucketStore store =
        new ForwardingBucketStore(new InMemoryBucketStore(clock)) {
          @Override
          public Optional<BucketState> get(String key) {
            if (readsFail.get()) {
              throw new IllegalStateException("store closed");
            }
            return super.get(key);
          }
        };
    ClusterNode node =
        new ClusterNode(
            "10.0.0.1:1051",
            ClusterForwardingTest.SETTINGS,
            store,
            new LocalLimiter(engine, store, clock)::decide,
            timers,
            clock,
            null);
    restoring.add(node);
    node.useSnapshots(
        new SnapshotDirectory(
            dir,
            "10.0.0.1:1051",
            new PeerInputValidator(InputLimits.DEFAULTS, "10.0.0.1:1051"),
            clock));
    assertThat(node.restoreSnapshots()).isEqualTo(5);
    readsFail.set(true);

    CompletableFuture<Void> first = node.handOverRestored();
    timers.advance(ClusterNode.MAX_ANNOUNCE_BACKOFF);

    assertThat(first).as("the first attempt's future").isCompleted();
    assertThat(node.restoredKeysHeld()).as("held after two attempts that threw").isEqualTo(5);
    readsFail.set(false);
    timers.advance(ClusterNode.MAX_ANNOUNCE_BACKOFF);
    assertThat(node.restoredKeysHeld())
        .as("released by the next attempt: on an empty ring this node owns them")
        .isZero();
  }

  @Test
  void fullRestart_everyOwnerAcknowledged_noRestoredKeyHeldAnyMore() {
    cluster = start(3);
    hitEveryKey(cluster.node(1), 3);

    restart(3);

    for (Node node : cluster.nodes()) {
      assertThat(node.cluster().restoredKeysHeld()).as("held by %s", node.address()).isZero();
      assertThat(node.cluster().handOff().restoredHeld())
          .as("watched by %s's hand-off", node.address())
          .isZero();
    }
    assertThat(remainingAsked(cluster.node(2))).containsOnly(7L);
  }

  @Test
  void failMode_anOwnerStartingAfterTheResendsToItEnded_getsItsRestoredCountsWhenItJoins()
      throws Exception {
    String late = restartAloneBesideALateOwner();
    Node first = cluster.node(0);
    assertThat(
            Await.holdsWithin(Duration.ofSeconds(10), () -> first.cluster().liveness().isDown(late)))
        .as("the late owner is found down")
        .isTrue();
    for (int second = 0; second < 60; second++) {
      timers.advance(Duration.ofSeconds(1));
    }

    Node joined = cluster.startAt(late);

    assertThat(remainingAsked(joined)).containsOnly(7L);
    assertThat(remainingAsked(first)).containsOnly(7L);
    assertThat(first.cluster().restoredKeysHeld()).isZero();
  }

  /**
   * A joiner discovery does not list yet that prepares its return before a restoring node handed
   * its restored buckets to their owners gets a copy of those it will own, while each stays held for
   * its owner on the current ring, which gets it when it joins.
   */
  @Test
  void unlistedJoiner_preparesItsReturnBeforeTheRestoredHandOver_theCurrentOwnerStillGetsTheCounts()
      throws Exception {
    String late = restartAloneBesideALateOwner();
    Node restoring = cluster.node(0);
    Node joiner = cluster.startUnlisted();
    try {
      HashRing now = restoring.cluster().membership().ring();
      HashRing withJoiner =
          now.withPeers(new TreeSet<>(List.of(restoring.address(), late, joiner.address())));
      List<Integer> movingToJoiner = new ArrayList<>();
      int joinersKeys = 0;
      for (int i = 0; i < KEYS; i++) {
        String hashKey = "h_" + KEY_NAMES.get(i);
        if (withJoiner.ownerOf(hashKey).equals(joiner.address())) {
          joinersKeys++;
          if (now.ownerOf(hashKey).equals(late)) {
            movingToJoiner.add(i);
          }
        }
      }
      assertThat(movingToJoiner)
          .as("keys the late owner owns now and the joiner would")
          .isNotEmpty();
      int held = restoring.cluster().restoredKeysHeld();
      long sentBefore = restoring.cluster().handOff().sentCount();
      long joinerReceived = joiner.cluster().handOff().receivedCount();

      restoring
          .cluster()
          .prepareReturn(joiner.address(), new InetSocketAddress("127.0.0.1", 40_000))
          .get(10, TimeUnit.SECONDS);

      assertThat(restoring.cluster().restoredKeysHeld())
          .as("restored keys held for their owner on the ring after the joiner's copy")
          .isEqualTo(held);
      assertThat(restoring.cluster().handOff().sentCount())
          .as("buckets counted as sent after the copies to the unlisted joiner")
          .isEqualTo(sentBefore);
      assertThat(joiner.cluster().handOff().receivedCount() - joinerReceived)
          .as("buckets the joiner stored: its restored keys and those the restoring node owns")
          .isEqualTo(joinersKeys);
      Node owner = cluster.startAt(late);
      for (int i : movingToJoiner) {
        assertThat(owner.check(req(i, 1)).get(0).remaining())
            .as("remaining of restored key %s at its owner after one more hit", KEY_NAMES.get(i))
            .isEqualTo(6L);
      }
      assertThat(restoring.cluster().restoredKeysHeld()).isZero();
      assertThat(restoring.cluster().handOff().sentCount())
          .as("buckets counted as sent once the owner acknowledged the %s held for it", held)
          .isEqualTo(sentBefore + held);
    } finally {
      joiner.server().shutdownNow();
      joiner.cluster().close();
    }
  }

  @Test
  void secondRestart_neitherLosesNorCountsTwice() {
    cluster = start(3);
    hitEveryKey(cluster.node(0), 3);
    restart(3);
    hitEveryKey(cluster.node(2), 1);

    restart(2);

    assertThat(remainingAsked(cluster.node(0))).containsOnly(6L);
  }

  @Test
  void fullRestart_afterTheWindowEnded_startsAfresh() {
    cluster = start(3);
    hitEveryKey(cluster.node(0), 3);
    cluster.stopAll();
    cluster.close();

    clock.advance(Duration.ofMillis(WINDOW + 1));
    cluster = start(3);

    assertThat(remainingAsked(cluster.node(0))).containsOnly(10L);
  }

  @Test
  void fullRestart_windowGoesOnFromWhereItWas() {
    cluster = start(3);
    hitEveryKey(cluster.node(0), 3);
    cluster.stopAll();
    cluster.close();

    clock.advance(Duration.ofMillis(WINDOW - 1_000));
    cluster = start(3);
    assertThat(remainingAsked(cluster.node(0))).containsOnly(7L);
    clock.advance(Duration.ofMillis(1_001));

    assertThat(remainingAsked(cluster.node(0))).containsOnly(10L);
  }

  @Test
  void fullRestart_aDamagedFileBesideGoodOnes_isSetAsideAndTheOthersLoad() throws IOException {
    cluster = start(3);
    hitEveryKey(cluster.node(0), 3);
    cluster.stopAll();
    cluster.close();
    Path damaged = dir.resolve("10.9.9.9_1051" + SnapshotDirectory.SUFFIX);
    Files.writeString(damaged, "WEIRSNAP and then nothing that makes sense");

    cluster = start(3);

    assertThat(remainingAsked(cluster.node(0))).containsOnly(7L);
    assertThat(files(".*\\.weirsnap.*"))
        .containsExactly("10.9.9.9_1051" + SnapshotDirectory.SUFFIX + ".rejected");
  }

  @Test
  void nodeClosedBeforeItJoined_leavesTheSnapshotFileAsItWas() throws IOException {
    String self = "127.0.0.1:1";
    Path file = dir.resolve(SnapshotDirectory.fileName(self));
    Files.writeString(file, "the file of the node's previous run");
    ExecutorScheduler scheduler = new ExecutorScheduler("snapshot-test", 1);
    try {
      InMemoryBucketStore store = new InMemoryBucketStore(clock);
      ClusterNode node =
          new ClusterNode(
              self,
              ClusterForwardingTest.SETTINGS,
              store,
              new LocalLimiter(engine, store, clock)::decide,
              scheduler,
              clock,
              null);
      node.useSnapshots(
          new SnapshotDirectory(
              dir, self, new PeerInputValidator(InputLimits.DEFAULTS, self), clock));

      node.close();
    } finally {
      scheduler.close();
    }

    assertThat(Files.readAllBytes(file))
        .isEqualTo("the file of the node's previous run".getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void withoutSnapshotDir_fullRestartLosesTheCounts() {
    cluster =
        LocalCluster.start(
            3,
            ClusterForwardingTest.SETTINGS,
            clock,
            store -> new LocalLimiter(engine, store, clock)::decide);
    hitEveryKey(cluster.node(0), 3);
    cluster.stopAll();
    cluster.close();

    cluster =
        LocalCluster.start(
            3,
            ClusterForwardingTest.SETTINGS,
            clock,
            store -> new LocalLimiter(engine, store, clock)::decide);

    assertThat(remainingAsked(cluster.node(0))).containsOnly(10L);
  }
}
