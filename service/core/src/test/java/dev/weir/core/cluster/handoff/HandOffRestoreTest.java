package dev.weir.core.cluster.handoff;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.engine.FixedWindowState;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.proto.gubernator.BucketSnapshot;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** How a bucket restored from a snapshot file joins the store ({@link HandOff#restore}). */
class HandOffRestoreTest {

  private static final String KEY = "n_k";
  private final FakeClock clock = new FakeClock(1_000);
  private final InMemoryBucketStore store = new InMemoryBucketStore(clock);
  private final HandOff handOff = new HandOff("self:1", store, null, clock, Duration.ofSeconds(2));

  private static BucketSnapshot tokens(long remaining, long expireAt) {
    return PeerProtos.toSnapshot(
        KEY, new TokenBucketState(Status.UNDER_LIMIT, 100, 60_000, remaining, 1_000, expireAt));
  }

  private long stored() {
    return ((TokenBucketState) store.get(KEY).orElseThrow()).remaining();
  }

  @Test
  void restore_copiesOfOneBucketFromSeveralFiles_keepTheMostConsumedWhateverTheOrder() {
    assertThat(handOff.restore(tokens(60, 61_000))).isTrue();
    assertThat(handOff.restore(tokens(40, 61_000))).isTrue();
    assertThat(handOff.restore(tokens(70, 61_000))).isTrue();

    assertThat(stored()).isEqualTo(40);
  }

  @Test
  void restore_neverAddsToWhatTheStoreHolds() {
    store.put(KEY, new TokenBucketState(Status.UNDER_LIMIT, 100, 60_000, 50, 1_000, 61_000));

    handOff.restore(tokens(50, 61_000));

    assertThat(stored()).isEqualTo(50);
  }

  @Test
  void restore_expiredBucket_dropped() {
    clock.advanceMillis(60_000);

    assertThat(handOff.restore(tokens(10, 61_000))).isFalse();
    assertThat(store.get(KEY)).isEmpty();
  }

  @Test
  void restore_laterWindowWins_overAMoreConsumedEarlierOne() {
    handOff.restore(
        PeerProtos.toSnapshot(KEY, new FixedWindowState(100, 60_000, 1_000, 90, 61_000)));
    handOff.restore(
        PeerProtos.toSnapshot(KEY, new FixedWindowState(100, 60_000, 31_000, 5, 91_000)));

    assertThat(((FixedWindowState) store.get(KEY).orElseThrow()).count()).isEqualTo(5);
  }
}
