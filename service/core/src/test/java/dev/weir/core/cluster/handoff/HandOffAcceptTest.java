package dev.weir.core.cluster.handoff;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** How a receiver merges successive snapshots of one bucket ({@link HandOff#accept}). */
class HandOffAcceptTest {

  private static final String KEY = "n_k";
  private final FakeClock clock = new FakeClock(1_000);
  private final InMemoryBucketStore store = new InMemoryBucketStore(clock);
  private final HandOff handOff = new HandOff("self:1", store, null, clock, Duration.ofSeconds(2));

  private TokenBucketState remaining(long n) {
    return new TokenBucketState(Status.UNDER_LIMIT, 100, 60_000, n, 1_000, 61_000);
  }

  private void accept(String from, long remaining) {
    handOff.accept(List.of(PeerProtos.toSnapshot(KEY, remaining(remaining))), from);
  }

  private long stored() {
    return ((TokenBucketState) store.get(KEY).orElseThrow()).remaining();
  }

  @Test
  void accept_laterSnapshotFromSameSender_addsOnlyItsNewHits() {
    accept("a:1", 50);
    store.put(KEY, remaining(48));

    accept("a:1", 45);

    assertThat(stored()).isEqualTo(43);
  }

  @Test
  void accept_lateOlderSnapshot_neitherCountedNorTakenAsTheBase() {
    accept("a:1", 50);
    accept("a:1", 60);

    accept("a:1", 45);

    assertThat(stored()).isEqualTo(45);
  }

  @Test
  void accept_snapshotFromAnotherSender_keepsTheMoreConsumed() {
    accept("a:1", 50);

    accept("b:1", 55);

    assertThat(stored()).isEqualTo(50);
  }

  @Test
  void accept_afterLineageExpired_laterSnapshotIsAFirstOne() {
    accept("a:1", 50);
    store.put(KEY, remaining(48));
    clock.advance(HandOff.LINEAGE_TTL.plusSeconds(1));

    accept("a:1", 45);

    assertThat(stored()).isEqualTo(45);
  }
}
