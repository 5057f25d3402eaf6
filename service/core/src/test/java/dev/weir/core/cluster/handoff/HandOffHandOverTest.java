package dev.weir.core.cluster.handoff;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerClient;
import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.InProcessPeers;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Restored buckets sent to their owner ({@link HandOff#handOver}) again after a send that failed
 * count the owner's own hits once, also when the owner's GLOBAL broadcast replaced the copy here
 * meanwhile.
 */
class HandOffHandOverTest {

  private static final HashRing BOTH = HashRing.of(List.of("a:1", "b:1"), 16, PeerHash.FNV1A);
  private static final String KEY = HandOffFixtures.keyOwnedBy(BOTH, "b:1");
  private static final HashRing ONLY_C = HashRing.of(List.of("c:1"), 16, PeerHash.FNV1A);
  private static final long LIMIT = 100;

  private final FakeClock clock = new FakeClock(1_000);
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final InProcessPeers peers = HandOffFixtures.peers(clock);
  private final PeerClientPool pool = new PeerClientPool(this::client, clock);
  private final InMemoryBucketStore aStore = new InMemoryBucketStore(clock);
  private final InMemoryBucketStore bStore = new InMemoryBucketStore(clock);
  private final HandOff a = new HandOff("a:1", aStore, pool, clock, Duration.ofSeconds(2));
  private final HandOff b = new HandOff("b:1", bStore, null, clock, Duration.ofSeconds(2));
  private final InMemoryBucketStore cStore = new InMemoryBucketStore(clock);
  private final HandOff c = new HandOff("c:1", cStore, null, clock, Duration.ofSeconds(2));
  // Whether b:1 refuses transfers before merging them.
  private volatile boolean bRefuses;
  // How many more transfers b:1 merges and then fails to answer.
  private final AtomicInteger answersLost = new AtomicInteger();
  // What happens at a:1 once b:1 merged a transfer, before b:1 answers.
  private volatile Runnable merged = () -> {};

  @AfterEach
  void stop() {
    pool.close();
    peers.close();
  }

  @Test
  void handOver_ownersBroadcastReplacedTheCopyAfterASendWhoseAnswerWasLost_ownersHitsCountOnce()
      throws Exception {
    a.restore(PeerProtos.toSnapshot(KEY, bucket(LIMIT - 40)));
    answersLost.set(1);
    assertThat(a.handOver(Set.of(KEY), BOTH).get(5, TimeUnit.SECONDS))
        .as("merged by b:1, its answer lost")
        .containsExactly(KEY);
    assertThat(remaining(bStore)).isEqualTo(60);
    bStore.put(KEY, bucket(50));
    a.writingCopy(KEY, true);
    aStore.put(KEY, bucket(50));

    assertThat(a.handOver(Set.of(KEY), BOTH).get(5, TimeUnit.SECONDS)).isEmpty();

    assertThat(remaining(bStore))
        .as("a:1's 40 restored hits and b:1's 10 since, b:1's 10 not counted twice")
        .isEqualTo(50);
  }

  @Test
  void handOver_ownersBroadcastReplacedTheCopyBeforeTheFirstSend_sendsTheRestoredState()
      throws Exception {
    a.restore(PeerProtos.toSnapshot(KEY, bucket(LIMIT - 40)));
    bStore.put(KEY, bucket(LIMIT - 5));
    a.writingCopy(KEY, true);
    aStore.put(KEY, bucket(LIMIT - 5));

    assertThat(a.handOver(Set.of(KEY), BOTH).get(5, TimeUnit.SECONDS)).isEmpty();

    assertThat(remaining(bStore))
        .as("the restored 40 hits reach b:1, which had not counted them")
        .isEqualTo(60);
  }

  @Test
  void handOver_copyNotReplaced_sendsTheBucketAsItIsNow() throws Exception {
    a.restore(PeerProtos.toSnapshot(KEY, bucket(LIMIT - 40)));
    answersLost.set(1);
    a.handOver(Set.of(KEY), BOTH).get(5, TimeUnit.SECONDS);
    aStore.put(KEY, bucket(LIMIT - 45));

    a.handOver(Set.of(KEY), BOTH).get(5, TimeUnit.SECONDS);

    assertThat(remaining(bStore)).isEqualTo(55);
  }

  /**
   * Two hand-overs of one restored key both acknowledged before its holder releases it once, as
   * when a ring change sends the keys still held while the first hand-over waits on a slow owner.
   */
  @Test
  void handOver_twoOverlappingHandOversAcknowledged_theKeyCountsOnceWhenForgotten()
      throws Exception {
    a.restore(PeerProtos.toSnapshot(KEY, bucket(LIMIT - 40)));
    assertThat(a.handOver(Set.of(KEY), BOTH).get(5, TimeUnit.SECONDS)).isEmpty();
    assertThat(a.handOver(Set.of(KEY), BOTH).get(5, TimeUnit.SECONDS)).isEmpty();

    a.forgetRestored(Set.of(KEY));
    a.forgetRestored(Set.of(KEY));

    assertThat(a.sentCount()).as("sent, acknowledged twice, released").isEqualTo(1);
  }

  @Test
  void copyOver_acknowledgedThenForgotten_countsNothing() throws Exception {
    a.restore(PeerProtos.toSnapshot(KEY, bucket(LIMIT - 40)));
    assertThat(a.copyOver(Set.of(KEY), BOTH).get(5, TimeUnit.SECONDS)).isEmpty();

    a.forgetRestored(Set.of(KEY));

    assertThat(a.sentCount()).isZero();
  }

  /** A bucket counted here for an owner that was not reached, handed back to it. */
  @Test
  void handBack_keyNotRestoredAcknowledged_countsAsSent() throws Exception {
    aStore.put(KEY, bucket(LIMIT - 3));

    assertThat(a.handBack(Set.of(KEY), BOTH).get(5, TimeUnit.SECONDS)).isEmpty();

    assertThat(a.sentCount()).isEqualTo(1);
  }

  /**
   * A bucket merged here from its owner, then counted here while the owner was not reached and
   * handed back to it, comes back in the owner's next snapshot with this node's hits in it.
   */
  @Test
  void handBack_theOwnerSendsTheBucketBackAfterwards_hitsCountedHereCountOnce() throws Exception {
    a.accept(List.of(PeerProtos.toSnapshot(KEY, bucket(LIMIT - 10))), "b:1");
    aStore.put(KEY, bucket(LIMIT - 15));
    bStore.put(KEY, bucket(LIMIT - 10));
    assertThat(a.handBack(Set.of(KEY), BOTH).get(5, TimeUnit.SECONDS)).isEmpty();
    assertThat(remaining(bStore)).isEqualTo(85);

    a.accept(List.of(PeerProtos.toSnapshot(KEY, bucket(85))), "b:1");

    assertThat(remaining(aStore))
        .as("b:1's 10 hits and a:1's 5, a:1's 5 not counted twice")
        .isEqualTo(85);
  }

  /**
   * A bucket merged here from its owner, then counted here while the owner was not reached, whose
   * hand-back the owner never got: the owner's next snapshot adds only its own hits since the one
   * merged here.
   */
  @Test
  void handBack_notDelivered_theOwnersNextSnapshotKeepsTheHitsOfBoth() throws Exception {
    a.accept(List.of(PeerProtos.toSnapshot(KEY, bucket(LIMIT - 10))), "b:1");
    aStore.put(KEY, bucket(LIMIT - 15));
    bRefuses = true;
    assertThat(a.handBack(Set.of(KEY), BOTH).get(5, TimeUnit.SECONDS)).containsExactly(KEY);
    assertThat(bStore.get(KEY)).as("b:1 merged nothing").isEmpty();

    a.accept(List.of(PeerProtos.toSnapshot(KEY, bucket(LIMIT - 13))), "b:1");

    assertThat(remaining(aStore))
        .as("b:1's 10 and 3 hits and a:1's 5, each counted")
        .isEqualTo(82);
  }

  /**
   * A bucket merged here from one node and handed to another: the first node's next snapshot adds
   * only its hits since the one merged here, the other node not being the one that sent it.
   */
  @Test
  void handBack_toANodeOtherThanTheLineagesSender_theSendersNextSnapshotKeepsTheHitsOfBoth()
      throws Exception {
    a.accept(List.of(PeerProtos.toSnapshot(KEY, bucket(LIMIT - 10))), "b:1");
    aStore.put(KEY, bucket(LIMIT - 15));
    assertThat(a.handBack(Set.of(KEY), ONLY_C).get(5, TimeUnit.SECONDS)).isEmpty();
    assertThat(HandOffFixtures.remaining(cStore, KEY)).isEqualTo(85);

    a.accept(List.of(PeerProtos.toSnapshot(KEY, bucket(LIMIT - 13))), "b:1");

    assertThat(remaining(aStore))
        .as("b:1's 10 and 3 hits and a:1's 5, each counted")
        .isEqualTo(82);
  }

  /**
   * A hand-back to a node other than the lineage's sender keeps the lineage as it was, not written
   * again: it still expires {@link HandOff#LINEAGE_TTL} after the snapshot it names was merged, and
   * the sender's later, unrelated snapshot merges as a first one.
   */
  @Test
  void handBack_toANodeOtherThanTheLineagesSender_theLineageStillExpiresOnTime() throws Exception {
    a.accept(List.of(PeerProtos.toSnapshot(KEY, bucket(LIMIT - 10))), "b:1");
    aStore.put(KEY, bucket(LIMIT - 15));
    clock.advance(HandOff.LINEAGE_TTL.minusSeconds(1));
    assertThat(a.handBack(Set.of(KEY), ONLY_C).get(5, TimeUnit.SECONDS)).isEmpty();
    clock.advance(Duration.ofSeconds(2));

    a.accept(List.of(PeerProtos.toSnapshot(KEY, bucket(LIMIT - 13))), "b:1");

    assertThat(remaining(aStore))
        .as("b:1's snapshot after the lineage's time merged as a first one: the more consumed")
        .isEqualTo(85);
  }

  @Test
  void handOver_restoredKeyReleasedBeforeALateResend_countsOnce() throws Exception {
    a.restore(PeerProtos.toSnapshot(KEY, bucket(LIMIT - 40)));
    assertThat(a.handOver(Set.of(KEY), BOTH).get(5, TimeUnit.SECONDS)).isEmpty();
    a.forgetRestored(Set.of(KEY));

    assertThat(a.handOver(Set.of(KEY), BOTH).get(5, TimeUnit.SECONDS))
        .as("a retry scheduled before the release")
        .isEmpty();

    assertThat(a.sentCount()).isEqualTo(1);
  }

  /**
   * A retry of the restored keys scheduled before one was acknowledged and released runs after the
   * owner's GLOBAL broadcast replaced the copy here: the owner would add its own hits since the
   * acknowledged send a second time.
   */
  @Test
  void handOver_restoredKeyReleasedThenReplacedByTheOwnersBroadcast_notSentAgain()
      throws Exception {
    a.restore(PeerProtos.toSnapshot(KEY, bucket(LIMIT - 40)));
    assertThat(a.handOver(Set.of(KEY), BOTH).get(5, TimeUnit.SECONDS)).isEmpty();
    a.forgetRestored(Set.of(KEY));
    bStore.put(KEY, bucket(50));
    a.writingCopy(KEY, true);
    aStore.put(KEY, bucket(50));

    assertThat(a.handOver(Set.of(KEY), BOTH).get(5, TimeUnit.SECONDS))
        .as("a retry scheduled before the release")
        .isEmpty();

    assertThat(remaining(bStore))
        .as("a:1's 40 restored hits and b:1's 10 since, b:1's 10 not counted twice")
        .isEqualTo(50);
  }

  @Test
  void handOver_restoredKeyForgottenBeforeItsAcknowledgement_countsOnce() throws Exception {
    a.restore(PeerProtos.toSnapshot(KEY, bucket(LIMIT - 40)));
    merged = () -> a.forgetRestored(Set.of(KEY));

    assertThat(a.handOver(Set.of(KEY), BOTH).get(5, TimeUnit.SECONDS)).isEmpty();

    assertThat(a.sentCount()).as("released, then acknowledged").isEqualTo(1);
  }

  private static long remaining(InMemoryBucketStore store) {
    return HandOffFixtures.remaining(store, KEY);
  }

  private static TokenBucketState bucket(long remaining) {
    return HandOffFixtures.bucket(LIMIT, remaining);
  }

  /**
   * A client of b:1, whose transfers b:1's hand-off merges before it answers (or fails to), or of
   * c:1, which merges them.
   */
  private PeerClient client(String address) {
    if (address.equals("c:1")) {
      return HandOffFixtures.client(peers, address, c::accept, scheduler);
    }
    return HandOffFixtures.client(
        peers,
        address,
        (buckets, from) -> {
          if (bRefuses) {
            throw new IllegalStateException("refused, nothing merged");
          }
          int stored = b.accept(buckets, from);
          merged.run();
          if (answersLost.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            throw new IllegalStateException("merged, answer lost");
          }
          return stored;
        },
        scheduler);
  }
}
