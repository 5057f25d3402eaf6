package dev.weir.core.cluster.handoff;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerClient;
import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.InProcessPeers;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A ring change's transfer that fails is sent again, to the owner of then, as the bucket is then. */
class HandOffResendTest {

  private static final Duration FIRST = Duration.ofMillis(500);
  private static final HashRing ALL = HashRing.of(List.of("a:1", "b:1", "c:1"), 16, PeerHash.FNV1A);

  private final FakeClock clock = new FakeClock(1_000);
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final InProcessPeers peers = HandOffFixtures.peers(clock);
  private final PeerClientPool pool = new PeerClientPool(this::client, clock);
  private final InMemoryBucketStore store = new InMemoryBucketStore(clock);
  private final AtomicReference<HashRing> ring = new AtomicReference<>();
  // How many more TransferBuckets calls each peer refuses, and the buckets each one stored.
  private final Map<String, AtomicInteger> refusals = new ConcurrentHashMap<>();
  private final Map<String, List<BucketSnapshot>> received = new ConcurrentHashMap<>();
  private final HandOff handOff = handOff(Runnable::run);

  @AfterEach
  void stop() {
    pool.close();
    peers.close();
  }

  @Test
  void ringChanged_ownerRefusesTheFirstSend_sendsTheBucketAgainAsItIsThenAfterTheWait()
      throws Exception {
    HashRing after = ALL.without("a:1");
    String key = handedOffWithSendsRefused(after, 4, 1);
    assertThat(receivedBy("b:1")).as("the first send failed").isEmpty();
    store.put(key, bucket(2));
    scheduler.advance(FIRST.minusMillis(1));
    assertThat(receivedBy("b:1")).as("not before the wait").isEmpty();
    scheduler.advance(Duration.ofMillis(1));

    assertThat(receivedBy("b:1")).singleElement().satisfies(b -> {
      assertThat(b.getKey()).isEqualTo(key);
      assertThat(b.getTokenBucket().getRemaining()).as("the bucket as it is now").isEqualTo(2);
    });
    assertThat(handOff.keysInTransfer()).isZero();
  }

  @Test
  void ringChanged_ringChangedAgainBeforeTheResend_sendsToTheOwnerOfThen() throws Exception {
    HashRing after = ALL.without("a:1");
    String key = handedOffWithSendsRefused(after, 4, 1);
    ring.set(after.without("b:1"));
    scheduler.advance(FIRST);

    assertThat(receivedBy("b:1")).isEmpty();
    assertThat(receivedBy("c:1")).extracting(BucketSnapshot::getKey).containsExactly(key);
  }

  @Test
  void ringChanged_keyOwnedHereAgainBeforeTheResend_isNotSent() throws Exception {
    HashRing after = ALL.without("a:1");
    handedOffWithSendsRefused(after, 4, 1);
    ring.set(ALL);
    scheduler.advance(FIRST);

    assertThat(receivedBy("b:1")).isEmpty();
    assertThat(handOff.keysInTransfer()).isZero();
    assertThat(scheduler.pending()).isZero();
  }

  @Test
  void ringChanged_ownerRefusesEverySend_waitsLongerEachTimeAndStopsAfterTheLastAttempt()
      throws Exception {
    HashRing after = ALL.without("a:1");
    handedOffWithSendsRefused(after, 4, 100);
    List<Integer> sends = new ArrayList<>();
    for (Duration wait : List.of(FIRST, FIRST.multipliedBy(2), FIRST.multipliedBy(4))) {
      scheduler.advance(wait.minusMillis(1));
      sends.add(100 - refusals.get("b:1").get());
      scheduler.advance(Duration.ofMillis(1));
    }

    assertThat(sends).as("sends made just before each wait ended").containsExactly(1, 2, 3);
    assertThat(100 - refusals.get("b:1").get()).as("4 sends in all").isEqualTo(4);
    assertThat(scheduler.pending()).isZero();
    assertThat(handOff.keysInTransfer()).as("no watch left").isZero();
  }

  @Test
  void close_beforeAResend_sendsNothingMore() throws Exception {
    HashRing after = ALL.without("a:1");
    handedOffWithSendsRefused(after, 4, 1);
    handOff.close();
    scheduler.advance(FIRST);

    assertThat(receivedBy("b:1")).isEmpty();
    assertThat(handOff.keysInTransfer()).isZero();
  }

  @Test
  void ringChanged_bucketReplacedByTheOwnersBroadcastBeforeTheResend_sentAsFirstScanned()
      throws Exception {
    HashRing after = ALL.without("a:1");
    String key = handedOffWithSendsRefused(after, 0, 1);
    handOff.writingCopy(key, true);
    store.put(key, bucket(4));
    scheduler.advance(FIRST);

    assertThat(receivedBy("b:1"))
        .as("the owner never had this node's count: the broadcast came from its empty bucket")
        .singleElement()
        .satisfies(b -> assertThat(b.getTokenBucket().getRemaining()).isZero());
    assertThat(handOff.keysInTransfer()).isZero();
  }

  @Test
  void ringChanged_scanRunsAfterALaterChange_sendsToTheOwnerOnTheLaterRing() throws Exception {
    List<Runnable> scans = new ArrayList<>();
    HandOff queued = handOff(scans::add);
    HashRing withoutA = ALL.without("a:1");
    HashRing later = withoutA.without("b:1");
    String key = keyMovingTo(withoutA, "b:1");
    store.put(key, bucket(4));

    var change = queued.ringChanged(ALL, withoutA);
    ring.set(later);
    scans.forEach(Runnable::run);
    change.get(5, TimeUnit.SECONDS);

    assertThat(receivedBy("b:1")).isEmpty();
    assertThat(receivedBy("c:1")).extracting(BucketSnapshot::getKey).containsExactly(key);
  }

  /**
   * Takes a:1 off the ring with one bucket of {@code remaining} that moves to b:1, which refuses
   * its first {@code refusals} sends; returns the bucket's key once the hand-off's first send ended.
   */
  private String handedOffWithSendsRefused(HashRing after, long remaining, int refusals)
      throws Exception {
    String key = keyMovingTo(after, "b:1");
    store.put(key, bucket(remaining));
    ring.set(after);
    refuse("b:1", refusals);
    handOff.ringChanged(ALL, after).get(5, TimeUnit.SECONDS);
    return key;
  }

  /** Returns a:1's hand-off, scanning on {@code scans}, sending 4 times at most. */
  private HandOff handOff(java.util.concurrent.Executor scans) {
    return new HandOff(
        "a:1",
        store,
        pool,
        clock,
        Duration.ofSeconds(2),
        scans,
        new TransferRetry(scheduler, ring::get, FIRST, Duration.ofSeconds(5), 4));
  }

  private void refuse(String peer, int calls) {
    refusals.put(peer, new AtomicInteger(calls));
  }

  private List<BucketSnapshot> receivedBy(String peer) {
    return received.getOrDefault(peer, List.of());
  }

  private static String keyMovingTo(HashRing after, String owner) {
    for (int i = 0; ; i++) {
      String key = "n_k" + i;
      if (ALL.ownerOf(key).equals("a:1") && after.ownerOf(key).equals(owner)) {
        return key;
      }
    }
  }

  private static TokenBucketState bucket(long remaining) {
    return new TokenBucketState(Status.UNDER_LIMIT, 5, 60_000, remaining, 1_000, 61_000);
  }

  /** A client of a peer that refuses as many transfers as {@link #refusals} says, then stores. */
  private PeerClient client(String address) {
    return HandOffFixtures.client(
        peers,
        address,
        (buckets, from) -> {
          AtomicInteger left = refusals.get(address);
          if (left != null && left.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            throw new IllegalStateException("refused");
          }
          received.computeIfAbsent(address, a -> new CopyOnWriteArrayList<>()).addAll(buckets);
          return buckets.size();
        },
        scheduler);
  }
}
