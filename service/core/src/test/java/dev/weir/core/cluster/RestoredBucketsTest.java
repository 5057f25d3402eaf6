package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.Status;
import dev.weir.core.store.ClockBucketStore;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class RestoredBucketsTest {

  private static final long LIMIT = 1_000;
  private static final long WINDOW = 600_000;

  private final FakeClock clock = new FakeClock();

  private TokenBucketState used(long hits) {
    long now = clock.wallMillis();
    return new TokenBucketState(
        Status.UNDER_LIMIT, LIMIT, WINDOW, LIMIT - hits, now, now + WINDOW);
  }

  /**
   * Ten times a cache's worth of distinct live buckets, offered in random order, leave at most the
   * cache's worth held until the restore, and those are the most consumed.
   */
  @Test
  void offeringTenTimesTheCapacity_holdsOnlyTheCapacityAndTheMostConsumed() {
    ClockBucketStore store = new ClockBucketStore(clock, 50);
    RestoredBuckets buckets = new RestoredBuckets(store, null, clock);
    List<Integer> order = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      order.add(i);
    }
    Collections.shuffle(order, new Random(3));

    for (int i : order) {
      buckets.offer(PeerProtos.toSnapshot("k" + i, used(i)));
    }

    Set<String> top = new HashSet<>();
    for (int i = 450; i < 500; i++) {
      top.add("k" + i);
    }
    assertThat(buckets.held()).as("buckets held until the restore").isLessThanOrEqualTo(50);
    assertThat(buckets.heldKeys()).as("the 50 most consumed").isEqualTo(top);
    assertThat(buckets.dropped()).as("refused for want of room").isEqualTo(450);
  }

  /** A later, more consumed copy of a held key replaces its rank and is merged, not added. */
  @Test
  void copiesOfOneKey_areMergedIntoOneHeldBucket() {
    RestoredBuckets buckets = new RestoredBuckets(new ClockBucketStore(clock, 50), null, clock);

    buckets.offer(PeerProtos.toSnapshot("k", used(1)));
    buckets.offer(PeerProtos.toSnapshot("k", used(900)));

    assertThat(buckets.held()).isEqualTo(1);
    assertThat(buckets.dropped()).isZero();
  }

  /** An unbounded store holds every live bucket offered and refuses none. */
  @Test
  void unboundedStore_holdsEveryBucket() {
    RestoredBuckets buckets =
        new RestoredBuckets(new InMemoryBucketStore(clock), null, clock);

    for (int i = 0; i < 500; i++) {
      buckets.offer(PeerProtos.toSnapshot("k" + i, used(i)));
    }

    assertThat(buckets.held()).isEqualTo(500);
    assertThat(buckets.dropped()).isZero();
    assertThat(buckets.room()).isEqualTo(Long.MAX_VALUE - 500);
  }

  /**
   * A store of 64 segments of 100 has room beside 3200 live buckets for none of a further file of
   * 3200: its segments need slack beyond the 6400 (ClockBucketStore#capacityToHold).
   */
  @Test
  void segmentedStore_roomLeavesTheSegmentsSlack() {
    ClockBucketStore store = new ClockBucketStore(clock, 6_400);
    RestoredBuckets buckets = new RestoredBuckets(store, null, clock);

    for (int i = 0; i < 3_200; i++) {
      buckets.offer(PeerProtos.toSnapshot("k" + i, used(i % 1_000)));
    }

    assertThat(buckets.room()).isLessThan(3_200);
    assertThat(store.capacityToHold(3_200 + buckets.room())).isLessThanOrEqualTo(6_400);
    assertThat(store.capacityToHold(3_200 + buckets.room() + 1)).isGreaterThan(6_400);
  }
}
