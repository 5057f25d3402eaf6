package dev.weir.core.cluster.handoff;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerClient;
import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.ForwardingBucketStore;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.InProcessPeers;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A key that comes back to a node from the peer it last received the key from, after this node
 * sent the key there, counts this node's hits once: the node's lineage of the key ends with every
 * transfer of it, acknowledged or not.
 */
class HandOffLineageTest {

  private static final HashRing BOTH = HashRing.of(List.of("a:1", "b:1"), 16, PeerHash.FNV1A);
  private static final HashRing ONLY_B = BOTH.without("a:1");
  private static final String KEY = HandOffFixtures.keyOwnedBy(BOTH, "a:1");
  private static final long LIMIT = 100;

  private final FakeClock clock = new FakeClock(1_000);
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final InProcessPeers peers = HandOffFixtures.peers(clock);
  private final PeerClientPool pool = new PeerClientPool(this::client, clock);
  private final InMemoryBucketStore aBuckets = new InMemoryBucketStore(clock);
  private volatile boolean aReadsFail;
  private final ForwardingBucketStore aStore =
      new ForwardingBucketStore(aBuckets) {
        @Override
        public Optional<BucketState> get(String key) {
          if (aReadsFail) {
            throw new IllegalStateException("store closed");
          }
          return super.get(key);
        }
      };
  private final InMemoryBucketStore bStore = new InMemoryBucketStore(clock);
  private final HandOff a = handOff("a:1", aStore);
  private final HandOff b = handOff("b:1", bStore);
  // What b:1 does once it merged a transfer from a:1, before it answers.
  private volatile Consumer<List<BucketSnapshot>> afterBMerged = buckets -> {};

  @AfterEach
  void stop() {
    pool.close();
    peers.close();
  }

  @Test
  void transfer_keptChangingThroughEveryRound_itsHitsHandedOverCountOnceWhenTheKeyComesBack()
      throws Exception {
    receivedFromBWithFiveHitsOnA();
    afterBMerged = buckets -> hit(aBuckets, 1);

    a.ringChanged(BOTH, ONLY_B).get(5, TimeUnit.SECONDS);
    assertThat(remaining(aBuckets)).as("a hit after each of the 3 rounds; kept on a:1").isEqualTo(82);
    assertThat(remaining(bStore)).as("b:1 has a:1's hits up to the last round").isEqualTo(83);
    threeHitsOnBThenBackToA();

    assertThat(remaining(aBuckets))
        .as("the more consumed of a:1's 82 and b:1's 80, not a:1's hits that b:1 sent back again")
        .isEqualTo(80);
  }

  @Test
  void transfer_failedAfterTheOwnerMergedIt_itsHitsCountOnceWhenTheKeyComesBack()
      throws Exception {
    receivedFromBWithFiveHitsOnA();
    afterBMerged =
        buckets -> {
          throw new IllegalStateException("merged, answer lost");
        };

    a.ringChanged(BOTH, ONLY_B).get(5, TimeUnit.SECONDS);
    assertThat(remaining(bStore)).as("b:1 merged a:1's 85").isEqualTo(85);
    afterBMerged = buckets -> {};
    threeHitsOnBThenBackToA();

    assertFiveHitsOfACountedOnce();
  }

  @Test
  void transfer_storeFailsToReadAfterTheAck_itsHitsCountOnceWhenTheKeyComesBack()
      throws Exception {
    receivedFromBWithFiveHitsOnA();
    afterBMerged = buckets -> aReadsFail = true;

    a.ringChanged(BOTH, ONLY_B).get(5, TimeUnit.SECONDS);
    aReadsFail = false;
    afterBMerged = buckets -> {};
    threeHitsOnBThenBackToA();

    assertFiveHitsOfACountedOnce();
  }

  @Test
  void transfer_keptChangingThroughEveryRound_countedSentOnce() throws Exception {
    receivedFromBWithFiveHitsOnA();
    afterBMerged = buckets -> hit(aBuckets, 1);

    a.ringChanged(BOTH, ONLY_B).get(5, TimeUnit.SECONDS);

    assertThat(a.sentCount()).as("acknowledged 3 times, kept changing").isEqualTo(1);
  }

  @Test
  void transfer_storeFailsToReadAfterTheAck_countedSent() throws Exception {
    receivedFromBWithFiveHitsOnA();
    afterBMerged = buckets -> aReadsFail = true;

    a.ringChanged(BOTH, ONLY_B).get(5, TimeUnit.SECONDS);

    assertThat(a.sentCount()).as("acknowledged, not read again").isEqualTo(1);
  }

  /** Has b:1 record 3 more hits and hand the key back to a:1 on {@link #BOTH}. */
  private void threeHitsOnBThenBackToA() throws Exception {
    hit(bStore, 3);
    b.ringChanged(ONLY_B, BOTH).get(5, TimeUnit.SECONDS);
  }

  /** Asserts that a:1 holds the key with b:1's 10 and 3 hits and its own 5 counted once each. */
  private void assertFiveHitsOfACountedOnce() {
    assertThat(remaining(aBuckets))
        .as("10 hits on b:1, 5 on a:1, 3 on b:1: a:1's 5 are not counted twice")
        .isEqualTo(82);
  }

  /**
   * Has b:1, owner of the key on {@link #ONLY_B} with 10 hits, hand it to a:1 on {@link #BOTH}, and
   * a:1 record 5 more hits.
   */
  private void receivedFromBWithFiveHitsOnA() throws Exception {
    bStore.put(KEY, bucket(LIMIT - 10));
    b.ringChanged(ONLY_B, BOTH).get(5, TimeUnit.SECONDS);
    assertThat(remaining(aBuckets)).isEqualTo(90);
    hit(aBuckets, 5);
  }

  private HandOff handOff(String self, ForwardingBucketStore store) {
    return new HandOff(self, store, pool, clock, Duration.ofSeconds(2));
  }

  private HandOff handOff(String self, InMemoryBucketStore store) {
    return handOff(self, new ForwardingBucketStore(store));
  }

  private static void hit(InMemoryBucketStore store, long hits) {
    store.put(KEY, bucket(remaining(store) - hits));
  }

  private static long remaining(InMemoryBucketStore store) {
    return HandOffFixtures.remaining(store, KEY);
  }

  private static TokenBucketState bucket(long remaining) {
    return HandOffFixtures.bucket(LIMIT, remaining);
  }

  /** A client of a:1 or b:1 whose transfers that node's hand-off merges. */
  private PeerClient client(String address) {
    Map<String, HandOff> nodes = Map.of("a:1", a, "b:1", b);
    return HandOffFixtures.client(
        peers,
        address,
        (buckets, from) -> {
          int stored = nodes.get(address).accept(buckets, from);
          if (address.equals("b:1")) {
            afterBMerged.accept(buckets);
          }
          return stored;
        },
        scheduler);
  }
}
