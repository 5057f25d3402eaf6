package dev.weir.core.cluster.handoff;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerClient;
import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.ForwardingBucketStore;
import dev.weir.core.testkit.InProcessPeers;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** What a transfer leaves behind once its owner acknowledged it. */
class HandOffTransferTest {

  private final FakeClock clock = new FakeClock(1_000);
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final InProcessPeers peers = HandOffFixtures.peers(clock);
  private final PeerClientPool pool = new PeerClientPool(this::client, clock);

  @AfterEach
  void stop() {
    pool.close();
    peers.close();
  }

  /** A client of a peer that accepts every bucket sent to it. */
  private PeerClient client(String address) {
    return HandOffFixtures.client(
        peers,
        address,
        (buckets, from) -> buckets.size(),
        scheduler);
  }

  @Test
  void ringChanged_storeFailsToReadABucketAfterTheAck_noWatchLeftOnAnyKey() throws Exception {
    HashRing both = HashRing.of(List.of("a:1", "b:1"), 16, PeerHash.FNV1A);
    AtomicInteger reads = new AtomicInteger();
    InMemoryBucketStore buckets = new InMemoryBucketStore(clock);
    ForwardingBucketStore store =
        new ForwardingBucketStore(buckets) {
          @Override
          public Optional<BucketState> get(String key) {
            // The scan reads each bucket once; the check after the ack fails on the first one.
            if (reads.incrementAndGet() == 4) {
              throw new IllegalStateException("store closed");
            }
            return super.get(key);
          }
        };
    for (int i = 0, owned = 0; owned < 3; i++) {
      if (both.ownerOf("n_k" + i).equals("a:1")) {
        buckets.put(
            "n_k" + i, new TokenBucketState(Status.UNDER_LIMIT, 5, 60_000, 4, 1_000, 61_000));
        owned++;
      }
    }
    HandOff handOff = new HandOff("a:1", store, pool, clock, Duration.ofSeconds(2));

    handOff.ringChanged(both, both.without("a:1")).get(5, TimeUnit.SECONDS);

    assertThat(reads).as("three scanned, then the check after the ack").hasValueGreaterThan(3);
    assertThat(handOff.keysInTransfer()).as("no watch left").isZero();
  }
}
