package dev.weir.core.cluster.handoff;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.engine.FixedWindowState;
import dev.weir.core.engine.LeakyBucketState;
import dev.weir.core.engine.SlidingWindowState;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.Status;
import org.junit.jupiter.api.Test;

class BucketMergeTest {

  private static final long NOW = 500;

  @Test
  void moreConsumed_leakyBucketsUpdatedAtDifferentTimes_fewerTokensNowWins() {
    // 10 tokens per 10 s: one token per second.
    LeakyBucketState drainedLongAgo = new LeakyBucketState(10, 10_000, 10, 0, 0, 20_001);
    LeakyBucketState drainedJustNow = new LeakyBucketState(10, 10_000, 10, 2, 9_000, 20_001);
    // At 9 s the first holds 9 tokens, the second 2: the second is more consumed.
    assertThat(BucketMerge.moreConsumed(drainedJustNow, drainedLongAgo, 9_000))
        .isSameAs(drainedJustNow);
    assertThat(BucketMerge.moreConsumed(drainedLongAgo, drainedJustNow, 9_000))
        .isSameAs(drainedJustNow);
  }

  @Test
  void moreConsumed_gregorianLeakyBuckets_leakOverTheIntervalLength() {
    // Duration code 0 = one minute: 60 tokens per minute, one per second.
    LeakyBucketState early = new LeakyBucketState(60, 0, 60, 0, 0, 60_000);
    LeakyBucketState late = new LeakyBucketState(60, 0, 60, 5, 30_000, 60_000);
    // At 30 s the first holds 30 tokens, the second 5.
    assertThat(BucketMerge.moreConsumed(late, early, 30_000)).isSameAs(late);
    assertThat(BucketMerge.moreConsumed(early, late, 30_000)).isSameAs(late);
  }

  @Test
  void moreConsumed_noExisting_incomingKept() {
    TokenBucketState in = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 3, 0, 1000);
    assertThat(BucketMerge.moreConsumed(null, in, NOW)).isSameAs(in);
  }

  @Test
  void moreConsumed_tokenBuckets_fewerRemainingWins() {
    TokenBucketState fresh = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 9, 500, 1500);
    TokenBucketState old = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 2, 0, 1000);
    assertThat(BucketMerge.moreConsumed(fresh, old, NOW)).isSameAs(old);
    assertThat(BucketMerge.moreConsumed(old, fresh, NOW)).isSameAs(old);
  }

  @Test
  void moreConsumed_tokenBucketsOfDifferentLimits_moreUsedWins() {
    // 8 of 10 used against 58 of 100: the engine keeps the usage when a limit changes, so a raised
    // limit would answer the first with 92 remaining.
    TokenBucketState before =
        new TokenBucketState(Status.UNDER_LIMIT, 10, 3_600_000, 2, 0, 3_600_000);
    TokenBucketState raised =
        new TokenBucketState(Status.UNDER_LIMIT, 100, 3_600_000, 42, 0, 3_600_000);
    assertThat(BucketMerge.moreConsumed(before, raised, NOW)).isSameAs(raised);
    assertThat(BucketMerge.moreConsumed(raised, before, NOW)).isSameAs(raised);
  }

  @Test
  void moreConsumed_tokenBucketsTied_receiverKept() {
    TokenBucketState a = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 4, 0, 1000);
    TokenBucketState b = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 4, 10, 1010);
    assertThat(BucketMerge.moreConsumed(a, b, NOW)).isSameAs(a);
  }

  @Test
  void moreConsumed_leakyBuckets_fewerRemainingWins() {
    LeakyBucketState a = new LeakyBucketState(10, 1000, 10, 7, 0, 1000);
    LeakyBucketState b = new LeakyBucketState(10, 1000, 10, 1, 0, 1000);
    assertThat(BucketMerge.moreConsumed(a, b, NOW)).isSameAs(b);
  }

  @Test
  void moreConsumed_fixedWindowsSameWindow_largerCountWins() {
    FixedWindowState a = new FixedWindowState(10, 1000, 0, 3, 1000);
    FixedWindowState b = new FixedWindowState(10, 1000, 0, 8, 1000);
    assertThat(BucketMerge.moreConsumed(a, b, NOW)).isSameAs(b);
  }

  @Test
  void moreConsumed_fixedWindowsDifferentWindows_laterWindowWins() {
    FixedWindowState older = new FixedWindowState(10, 1000, 0, 9, 1000);
    FixedWindowState newer = new FixedWindowState(10, 1000, 1000, 1, 2000);
    assertThat(BucketMerge.moreConsumed(newer, older, NOW)).isSameAs(newer);
    assertThat(BucketMerge.moreConsumed(older, newer, NOW)).isSameAs(newer);
  }

  @Test
  void moreConsumed_slidingWindowsSameWindow_eachCountIsTheLarger() {
    SlidingWindowState a = new SlidingWindowState(10, 1000, 1000, 5, 1, 3000);
    SlidingWindowState b = new SlidingWindowState(10, 1000, 1000, 2, 4, 3000);
    assertThat(BucketMerge.moreConsumed(a, b, NOW))
        .isEqualTo(new SlidingWindowState(10, 1000, 1000, 5, 4, 3000));
  }

  @Test
  void moreConsumed_slidingWindowsDifferentWindows_laterWindowWins() {
    SlidingWindowState older = new SlidingWindowState(10, 1000, 0, 5, 9, 2000);
    SlidingWindowState newer = new SlidingWindowState(10, 1000, 1000, 9, 0, 3000);
    assertThat(BucketMerge.moreConsumed(older, newer, NOW)).isSameAs(newer);
  }

  @Test
  void moreConsumed_differentAlgorithms_receiverKept() {
    FixedWindowState mine = new FixedWindowState(10, 1000, 0, 1, 1000);
    TokenBucketState theirs = new TokenBucketState(Status.OVER_LIMIT, 10, 1000, 0, 0, 1000);
    assertThat(BucketMerge.moreConsumed(mine, theirs, NOW)).isSameAs(mine);
  }

  @Test
  void addConsumedSince_tokenBucketSameWindow_sendersNewHitsSubtracted() {
    TokenBucketState copied = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 7, 0, 1000);
    TokenBucketState receiverAfterOwnHit = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 6, 0, 1000);
    TokenBucketState senderAfterTwoHits = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 5, 0, 1000);

    assertThat(BucketMerge.addConsumedSince(receiverAfterOwnHit, copied, senderAfterTwoHits, NOW))
        .isEqualTo(new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 4, 0, 1000));
  }

  @Test
  void addConsumedSince_refundedTokenBucketsAtLongsEdges_saturatesInsteadOfOverflowing() {
    // Limit raised from 0 to Long.MAX while refunds had left Long.MAX: (MAX - 0) - (0 - MAX).
    TokenBucketState copied =
        new TokenBucketState(Status.UNDER_LIMIT, 0, 1000, Long.MAX_VALUE, 0, 1000);
    TokenBucketState receiver =
        new TokenBucketState(Status.UNDER_LIMIT, 0, 1000, Long.MAX_VALUE, 0, 1000);
    TokenBucketState sender =
        new TokenBucketState(Status.UNDER_LIMIT, Long.MAX_VALUE, 1000, 0, 0, 1000);

    assertThat(BucketMerge.addConsumedSince(receiver, copied, sender, NOW))
        .isEqualTo(new TokenBucketState(Status.UNDER_LIMIT, 0, 1000, 0, 0, 1000));
  }

  @Test
  void addConsumedSince_refundedFixedWindowsBelowZero_growthSaturates() {
    FixedWindowState copied = new FixedWindowState(10, 1000, 0, Long.MIN_VALUE, 1000);
    FixedWindowState receiver = new FixedWindowState(10, 1000, 0, 5, 1000);
    FixedWindowState sender = new FixedWindowState(10, 1000, 0, Long.MAX_VALUE, 1000);

    assertThat(BucketMerge.addConsumedSince(receiver, copied, sender, NOW))
        .isEqualTo(new FixedWindowState(10, 1000, 0, Long.MAX_VALUE, 1000));
  }

  @Test
  void addConsumedSince_tokenBucketSenderDrained_neverBelowZero() {
    TokenBucketState copied = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 2, 0, 1000);
    TokenBucketState receiver = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 1, 0, 1000);
    TokenBucketState sender = new TokenBucketState(Status.OVER_LIMIT, 10, 1000, 0, 0, 1000);

    assertThat(BucketMerge.addConsumedSince(receiver, copied, sender, NOW))
        .isEqualTo(new TokenBucketState(Status.OVER_LIMIT, 10, 1000, 0, 0, 1000));
  }

  @Test
  void addConsumedSince_tokenBucketSenderStartedNewWindow_notApplicable() {
    TokenBucketState copied = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 2, 0, 1000);
    TokenBucketState receiver = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 1, 0, 1000);
    TokenBucketState sender = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 9, 1000, 2000);

    assertThat(BucketMerge.addConsumedSince(receiver, copied, sender, NOW)).isNull();
  }

  @Test
  void addConsumedSince_noExisting_incomingKept() {
    TokenBucketState copied = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 2, 0, 1000);
    TokenBucketState sender = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 1, 0, 1000);

    assertThat(BucketMerge.addConsumedSince(null, copied, sender, NOW)).isSameAs(sender);
  }

  @Test
  void addConsumedSince_differentAlgorithms_notApplicable() {
    TokenBucketState copied = new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 2, 0, 1000);
    FixedWindowState receiver = new FixedWindowState(10, 1000, 0, 3, 1000);

    assertThat(BucketMerge.addConsumedSince(receiver, copied, copied, NOW)).isNull();
  }

  @Test
  void addConsumedSince_fixedWindowSameWindow_countsAdded() {
    FixedWindowState copied = new FixedWindowState(10, 1000, 0, 3, 1000);
    FixedWindowState receiver = new FixedWindowState(10, 1000, 0, 4, 1000);
    FixedWindowState sender = new FixedWindowState(10, 1000, 0, 5, 1000);

    assertThat(BucketMerge.addConsumedSince(receiver, copied, sender, NOW))
        .isEqualTo(new FixedWindowState(10, 1000, 0, 6, 1000));
  }

  @Test
  void addConsumedSince_slidingWindowSameWindow_eachCountAdded() {
    SlidingWindowState copied = new SlidingWindowState(10, 1000, 0, 2, 3, 2000);
    SlidingWindowState receiver = new SlidingWindowState(10, 1000, 0, 2, 4, 2000);
    SlidingWindowState sender = new SlidingWindowState(10, 1000, 0, 2, 6, 2000);

    assertThat(BucketMerge.addConsumedSince(receiver, copied, sender, NOW))
        .isEqualTo(new SlidingWindowState(10, 1000, 0, 2, 7, 2000));
  }

  @Test
  void addConsumedSince_leakyBucket_sendersDropTakenFromTokensNow() {
    // 10 tokens per 10 s: one per second; at 1 s each state below has leaked back one token.
    LeakyBucketState copied = new LeakyBucketState(10, 10_000, 10, 6, 0, 20_001);
    LeakyBucketState receiver = new LeakyBucketState(10, 10_000, 10, 5, 0, 20_001);
    LeakyBucketState sender = new LeakyBucketState(10, 10_000, 10, 4, 0, 20_001);

    assertThat(BucketMerge.addConsumedSince(receiver, copied, sender, 1_000))
        .isEqualTo(new LeakyBucketState(10, 10_000, 10, 4, 1_000, 20_001));
  }

  @Test
  void addConsumedSince_tokenBucketLimitRaisedBetweenSnapshots_onlyTheSendersHitsCount() {
    TokenBucketState copied = new TokenBucketState(Status.UNDER_LIMIT, 100, 1000, 40, 0, 1000);
    TokenBucketState receiver = new TokenBucketState(Status.UNDER_LIMIT, 100, 1000, 40, 0, 1000);
    // The sender saw the limit raised to 150 (remaining +50) and then took 10 hits: 80 left.
    TokenBucketState sender = new TokenBucketState(Status.UNDER_LIMIT, 150, 1000, 80, 0, 1000);

    TokenBucketState merged =
        (TokenBucketState) BucketMerge.addConsumedSince(receiver, copied, sender, NOW);

    assertThat(merged.remaining()).isEqualTo(30);
  }

  @Test
  void addConsumedSince_leakyBucketBurstChangedBetweenSnapshots_fallsBack() {
    LeakyBucketState copied = new LeakyBucketState(10, 10_000, 10, 5, 0, 20_000);
    LeakyBucketState sender = new LeakyBucketState(10, 10_000, 20, 15, 0, 20_000);

    assertThat(BucketMerge.addConsumedSince(copied, copied, sender, NOW)).isNull();
  }
}
