package dev.weir.core.cluster.handoff;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.engine.FixedWindowState;
import dev.weir.core.engine.LeakyBucketState;
import dev.weir.core.engine.SlidingWindowState;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.Status;
import org.junit.jupiter.api.Test;

class BucketMergeTest {

  @Test
  void moreConsumed_noExisting_incomingKept() {
    TokenBucketState in = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 3, 0, 1000);
    assertThat(BucketMerge.moreConsumed(null, in)).isSameAs(in);
  }

  @Test
  void moreConsumed_tokenBuckets_fewerRemainingWins() {
    TokenBucketState fresh = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 9, 500, 1500);
    TokenBucketState old = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 2, 0, 1000);
    assertThat(BucketMerge.moreConsumed(fresh, old)).isSameAs(old);
    assertThat(BucketMerge.moreConsumed(old, fresh)).isSameAs(old);
  }

  @Test
  void moreConsumed_tokenBucketsTied_receiverKept() {
    TokenBucketState a = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 4, 0, 1000);
    TokenBucketState b = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 4, 10, 1010);
    assertThat(BucketMerge.moreConsumed(a, b)).isSameAs(a);
  }

  @Test
  void moreConsumed_leakyBuckets_fewerRemainingWins() {
    LeakyBucketState a = new LeakyBucketState(10, 1000, 10, 7, 0, 1000);
    LeakyBucketState b = new LeakyBucketState(10, 1000, 10, 1, 0, 1000);
    assertThat(BucketMerge.moreConsumed(a, b)).isSameAs(b);
  }

  @Test
  void moreConsumed_fixedWindowsSameWindow_largerCountWins() {
    FixedWindowState a = new FixedWindowState(10, 1000, 0, 3, 1000);
    FixedWindowState b = new FixedWindowState(10, 1000, 0, 8, 1000);
    assertThat(BucketMerge.moreConsumed(a, b)).isSameAs(b);
  }

  @Test
  void moreConsumed_fixedWindowsDifferentWindows_laterWindowWins() {
    FixedWindowState older = new FixedWindowState(10, 1000, 0, 9, 1000);
    FixedWindowState newer = new FixedWindowState(10, 1000, 1000, 1, 2000);
    assertThat(BucketMerge.moreConsumed(newer, older)).isSameAs(newer);
    assertThat(BucketMerge.moreConsumed(older, newer)).isSameAs(newer);
  }

  @Test
  void moreConsumed_slidingWindowsSameWindow_eachCountIsTheLarger() {
    SlidingWindowState a = new SlidingWindowState(10, 1000, 1000, 5, 1, 3000);
    SlidingWindowState b = new SlidingWindowState(10, 1000, 1000, 2, 4, 3000);
    assertThat(BucketMerge.moreConsumed(a, b))
        .isEqualTo(new SlidingWindowState(10, 1000, 1000, 5, 4, 3000));
  }

  @Test
  void moreConsumed_slidingWindowsDifferentWindows_laterWindowWins() {
    SlidingWindowState older = new SlidingWindowState(10, 1000, 0, 5, 9, 2000);
    SlidingWindowState newer = new SlidingWindowState(10, 1000, 1000, 9, 0, 3000);
    assertThat(BucketMerge.moreConsumed(older, newer)).isSameAs(newer);
  }

  @Test
  void moreConsumed_differentAlgorithms_receiverKept() {
    FixedWindowState mine = new FixedWindowState(10, 1000, 0, 1, 1000);
    TokenBucketState theirs = new TokenBucketState(Status.OVER_LIMIT, 10, 1000, 0, 0, 1000);
    assertThat(BucketMerge.moreConsumed(mine, theirs)).isSameAs(mine);
  }
}
