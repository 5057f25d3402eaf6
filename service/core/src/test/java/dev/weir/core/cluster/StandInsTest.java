package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.Decision;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.model.Algorithm;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.WindowCounterCheck;
import java.time.ZoneOffset;
import java.util.Map;
import org.junit.jupiter.api.Test;

class StandInsTest {

  private static final long NOW = 1_000_000;
  private static final Map<String, String> MARK = Map.of("stand_in", "true");

  private final InMemoryBucketStore store = new InMemoryBucketStore(new FakeClock(NOW));
  private final StandIns standIns = new StandIns(new WindowCounterCheck(store));
  private final RateLimitEngine owner = new RateLimitEngine(ZoneOffset.UTC);
  private BucketState ownerState;

  private static RateLimitRequest hit(long at) {
    return RateLimitRequest.builder("n", "k").hits(1).limit(10).duration(60_000).createdAt(at).build();
  }

  private static RateLimitRequest request(Algorithm algorithm, long hits, long limit) {
    return RateLimitRequest.builder("n", "k")
        .algorithm(algorithm)
        .hits(hits)
        .limit(limit)
        .duration(60_000)
        .createdAt(NOW)
        .build();
  }

  private static RateLimitRequest request(Algorithm algorithm, long hits) {
    return request(algorithm, hits, 10);
  }

  /** Returns the owner's engine's answer to {@code r}, which the stand-ins are told. */
  private RateLimitResponse owned(RateLimitRequest r) {
    RateLimitResponse answer = ownerApplies(r);
    standIns.ownerAnswered(standIns.sending(), r, answer);
    return answer;
  }

  /** Returns the owner's engine's answer to {@code r}, which the stand-ins are not told. */
  private RateLimitResponse ownerApplies(RateLimitRequest r) {
    Decision d = owner.apply(ownerState, r, r.createdAt());
    ownerState = d.next();
    return d.response();
  }

  private static RateLimitRequest reset(Algorithm algorithm) {
    return request(algorithm, 0).withBehavior(Behavior.RESET_REMAINING);
  }

  /**
   * Returns the stand-in's status for {@code r}, asserting that the owner's engine, applying the
   * same requests, answers {@code r} with that status and at least as many left.
   */
  private Status standIn(RateLimitRequest r) {
    Decision d = owner.apply(ownerState, r, r.createdAt());
    ownerState = d.next();
    RateLimitResponse answer = standIns.answer(standIns.sending(), r, MARK);
    assertThat(answer.status())
        .as("stand-in's status for %s hits; the owner answers %s", r.hits(), d.response())
        .isEqualTo(d.response().status());
    assertThat(answer.remaining())
        .as("stand-in's remaining for %s hits; the owner answers %s", r.hits(), d.response())
        .isLessThanOrEqualTo(d.response().remaining());
    return answer.status();
  }

  @Test
  void answer_fixedWindowOwnerAnsweredOverWithNoneLeft_checkWithoutHitsOverTheLimit() {
    RateLimitRequest r = request(Algorithm.FIXED_WINDOW, 10);
    standIns.ownerAnswered(standIns.sending(), r, RateLimitResponse.of(Status.OVER_LIMIT, 10, 0, NOW + 30_000));

    RateLimitResponse first = standIns.answer(standIns.sending(), r.withHits(0), MARK);
    RateLimitResponse second = standIns.answer(standIns.sending(), r.withHits(0), MARK);

    assertThat(first.status()).isEqualTo(Status.OVER_LIMIT);
    assertThat(first.remaining()).isZero();
    assertThat(second.status()).as("after the stand-in's own answer").isEqualTo(Status.OVER_LIMIT);
  }

  @Test
  void answer_fixedWindowCountedPastTheLimit_overTheLimitAsTheOwner() {
    owned(request(Algorithm.FIXED_WINDOW, 10));
    assertThat(owned(request(Algorithm.FIXED_WINDOW, 5)).status()).isEqualTo(Status.OVER_LIMIT);

    assertThat(standIn(request(Algorithm.FIXED_WINDOW, 0))).isEqualTo(Status.OVER_LIMIT);
    assertThat(standIn(request(Algorithm.FIXED_WINDOW, 0))).isEqualTo(Status.OVER_LIMIT);
    assertThat(standIn(request(Algorithm.FIXED_WINDOW, 1))).isEqualTo(Status.OVER_LIMIT);
    assertThat(standIn(request(Algorithm.FIXED_WINDOW, 0))).isEqualTo(Status.OVER_LIMIT);
  }

  @Test
  void answer_fixedWindowRefusedHits_countedAsTheOwnerCountsThem() {
    owned(request(Algorithm.FIXED_WINDOW, 7));

    assertThat(standIn(request(Algorithm.FIXED_WINDOW, 5))).isEqualTo(Status.OVER_LIMIT);
    assertThat(standIn(request(Algorithm.FIXED_WINDOW, 1))).isEqualTo(Status.OVER_LIMIT);
    assertThat(standIn(request(Algorithm.FIXED_WINDOW, 0))).isEqualTo(Status.OVER_LIMIT);
  }

  @Test
  void answer_fixedWindowAtTheLimit_checkAdmittedThenAHitRefusedThenChecksRefused() {
    owned(request(Algorithm.FIXED_WINDOW, 10));

    assertThat(standIn(request(Algorithm.FIXED_WINDOW, 0))).isEqualTo(Status.UNDER_LIMIT);
    assertThat(standIn(request(Algorithm.FIXED_WINDOW, 1))).isEqualTo(Status.OVER_LIMIT);
    assertThat(standIn(request(Algorithm.FIXED_WINDOW, 0))).isEqualTo(Status.OVER_LIMIT);
  }

  @Test
  void answer_tokenBucketHitWhenEmpty_checksOverTheLimitAsGubernator() {
    owned(request(Algorithm.TOKEN_BUCKET, 10));
    assertThat(owned(request(Algorithm.TOKEN_BUCKET, 1)).status()).isEqualTo(Status.OVER_LIMIT);

    assertThat(standIn(request(Algorithm.TOKEN_BUCKET, 0))).isEqualTo(Status.OVER_LIMIT);
    assertThat(standIn(request(Algorithm.TOKEN_BUCKET, 1))).isEqualTo(Status.OVER_LIMIT);
    assertThat(standIn(request(Algorithm.TOKEN_BUCKET, 0))).isEqualTo(Status.OVER_LIMIT);
  }

  @Test
  void answer_tokenBucketEmptied_checksAdmittedUntilAHitIsRefused() {
    owned(request(Algorithm.TOKEN_BUCKET, 10));

    assertThat(standIn(request(Algorithm.TOKEN_BUCKET, 0))).isEqualTo(Status.UNDER_LIMIT);
    assertThat(standIn(request(Algorithm.TOKEN_BUCKET, 1))).isEqualTo(Status.OVER_LIMIT);
    assertThat(standIn(request(Algorithm.TOKEN_BUCKET, 0))).isEqualTo(Status.OVER_LIMIT);
  }

  @Test
  void answer_tokenBucketRefusedHits_notCounted() {
    owned(request(Algorithm.TOKEN_BUCKET, 7));

    assertThat(standIn(request(Algorithm.TOKEN_BUCKET, 5))).isEqualTo(Status.OVER_LIMIT);
    assertThat(standIn(request(Algorithm.TOKEN_BUCKET, 0))).isEqualTo(Status.UNDER_LIMIT);
    assertThat(standIn(request(Algorithm.TOKEN_BUCKET, 3))).isEqualTo(Status.UNDER_LIMIT);
    assertThat(standIn(request(Algorithm.TOKEN_BUCKET, 0))).isEqualTo(Status.UNDER_LIMIT);
  }

  @Test
  void answer_tokenBucketDrainedFromSomeLeft_checksUnderTheLimitAsTheOwner() {
    owned(request(Algorithm.TOKEN_BUCKET, 7));
    RateLimitResponse drained =
        owned(request(Algorithm.TOKEN_BUCKET, 5).withBehavior(Behavior.DRAIN_OVER_LIMIT));
    assertThat(drained.status()).isEqualTo(Status.OVER_LIMIT);
    assertThat(drained.remaining()).isZero();

    assertThat(standIn(request(Algorithm.TOKEN_BUCKET, 0))).isEqualTo(Status.UNDER_LIMIT);
    assertThat(standIn(request(Algorithm.TOKEN_BUCKET, 1))).isEqualTo(Status.OVER_LIMIT);
    assertThat(standIn(request(Algorithm.TOKEN_BUCKET, 0))).isEqualTo(Status.OVER_LIMIT);
  }

  @Test
  void answer_tokenBucketDrainedWhenKnownEmpty_checksOverTheLimitAsTheOwner() {
    owned(request(Algorithm.TOKEN_BUCKET, 10));
    owned(request(Algorithm.TOKEN_BUCKET, 1).withBehavior(Behavior.DRAIN_OVER_LIMIT));

    assertThat(standIn(request(Algorithm.TOKEN_BUCKET, 0))).isEqualTo(Status.OVER_LIMIT);
  }

  @Test
  void answer_leakyBucketEmpty_checksAdmittedHitsRefused() {
    owned(request(Algorithm.LEAKY_BUCKET, 10));
    assertThat(owned(request(Algorithm.LEAKY_BUCKET, 1)).status()).isEqualTo(Status.OVER_LIMIT);

    assertThat(standIn(request(Algorithm.LEAKY_BUCKET, 0))).isEqualTo(Status.UNDER_LIMIT);
    assertThat(standIn(request(Algorithm.LEAKY_BUCKET, 1))).isEqualTo(Status.OVER_LIMIT);
    assertThat(standIn(request(Algorithm.LEAKY_BUCKET, 0))).isEqualTo(Status.UNDER_LIMIT);
  }

  @Test
  void answer_slidingWindowRefusedHits_notCounted() {
    owned(request(Algorithm.SLIDING_WINDOW, 7));

    assertThat(standIn(request(Algorithm.SLIDING_WINDOW, 5))).isEqualTo(Status.OVER_LIMIT);
    assertThat(standIn(request(Algorithm.SLIDING_WINDOW, 0))).isEqualTo(Status.UNDER_LIMIT);
    assertThat(standIn(request(Algorithm.SLIDING_WINDOW, 3))).isEqualTo(Status.UNDER_LIMIT);
    assertThat(standIn(request(Algorithm.SLIDING_WINDOW, 1))).isEqualTo(Status.OVER_LIMIT);
    assertThat(standIn(request(Algorithm.SLIDING_WINDOW, 0))).isEqualTo(Status.UNDER_LIMIT);
  }

  @Test
  void answer_slidingWindowCountAboveALoweredLimit_checksOverTheLimit() {
    owned(request(Algorithm.SLIDING_WINDOW, 8, 10));
    assertThat(owned(request(Algorithm.SLIDING_WINDOW, 0, 5)).status())
        .isEqualTo(Status.OVER_LIMIT);

    assertThat(standIn(request(Algorithm.SLIDING_WINDOW, 0, 5))).isEqualTo(Status.OVER_LIMIT);
    assertThat(standIn(request(Algorithm.SLIDING_WINDOW, 1, 5))).isEqualTo(Status.OVER_LIMIT);
    assertThat(standIn(request(Algorithm.SLIDING_WINDOW, 0, 5))).isEqualTo(Status.OVER_LIMIT);
  }

  @Test
  void ownerAnswered_aLateAnswerAtTheLimit_doesNotReopenAWindowCountedPastIt() {
    RateLimitRequest r = request(Algorithm.FIXED_WINDOW, 1);
    standIns.ownerAnswered(standIns.sending(), r, RateLimitResponse.of(Status.OVER_LIMIT, 10, 0, NOW + 30_000));
    standIns.ownerAnswered(standIns.sending(), r, RateLimitResponse.of(Status.UNDER_LIMIT, 10, 0, NOW + 30_000));

    assertThat(standIns.answer(standIns.sending(), r.withHits(0), MARK).status()).isEqualTo(Status.OVER_LIMIT);
  }

  @Test
  void ownerAnswered_theOwnersAnswerToAReset_replacesTheStateBeforeIt() {
    owned(request(Algorithm.FIXED_WINDOW, 11));
    owned(reset(Algorithm.FIXED_WINDOW));

    assertThat(standIn(request(Algorithm.FIXED_WINDOW, 0))).isEqualTo(Status.UNDER_LIMIT);
    assertThat(standIn(request(Algorithm.FIXED_WINDOW, 10))).isEqualTo(Status.UNDER_LIMIT);
    assertThat(standIn(request(Algorithm.FIXED_WINDOW, 1))).isEqualTo(Status.OVER_LIMIT);
  }

  @Test
  void ownerAnswered_theOwnersLateAnswerToAResetAStandInAnswered_replacesTheStateBeforeIt() {
    owned(request(Algorithm.FIXED_WINDOW, 11));
    RateLimitRequest reset = reset(Algorithm.FIXED_WINDOW);
    long ticket = standIns.sending();
    RateLimitResponse standInReset = standIns.answer(ticket, reset, MARK);
    standIns.ownerAnswered(ticket, reset, ownerApplies(reset));

    assertThat(standInReset.status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(standInReset.remaining()).isEqualTo(10);
    assertThat(standIn(request(Algorithm.FIXED_WINDOW, 0))).isEqualTo(Status.UNDER_LIMIT);
  }

  @Test
  void ownerAnswered_aLateAnswerToAnItemSentBeforeAReset_doesNotUndoTheReset() {
    RateLimitRequest eleven = request(Algorithm.FIXED_WINDOW, 11);
    long sentBefore = standIns.sending();
    RateLimitResponse overTheLimit = ownerApplies(eleven);
    owned(reset(Algorithm.FIXED_WINDOW));
    standIns.ownerAnswered(sentBefore, eleven, overTheLimit);

    assertThat(standIn(request(Algorithm.FIXED_WINDOW, 0))).isEqualTo(Status.UNDER_LIMIT);
  }

  @Test
  void answer_aStandInsReset_forgetsTheOwnersStateBeforeIt() {
    RateLimitRequest eleven = request(Algorithm.FIXED_WINDOW, 11);
    long sentBefore = standIns.sending();
    standIns.ownerAnswered(standIns.sending(), eleven, ownerApplies(eleven));
    standIns.answer(standIns.sending(), reset(Algorithm.FIXED_WINDOW), MARK);
    standIns.ownerAnswered(sentBefore, eleven, ownerApplies(eleven));

    RateLimitResponse hit = standIns.answer(standIns.sending(), eleven.withHits(1), MARK);

    assertThat(hit.status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(hit.remaining()).isEqualTo(9);
  }

  @Test
  void answer_ownerNeverAnswered_fromABucketOfItsOwnUnderThePrefixedName() {
    RateLimitResponse answer = standIns.answer(standIns.sending(), hit(NOW), MARK);

    assertThat(answer.status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(answer.remaining()).isEqualTo(9);
    assertThat(answer.metadata()).isEqualTo(MARK);
    assertThat(store.get(StandIns.PREFIX + "n_k")).isPresent();
  }

  @Test
  void answer_ownerLastLeftOne_oneMoreAdmittedThenOverTheLimit() {
    standIns.ownerAnswered(standIns.sending(), hit(NOW), RateLimitResponse.of(Status.UNDER_LIMIT, 10, 1, NOW + 30_000));

    RateLimitResponse first = standIns.answer(standIns.sending(), hit(NOW + 1), MARK);
    RateLimitResponse second = standIns.answer(standIns.sending(), hit(NOW + 2), MARK);

    assertThat(first.status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(first.remaining()).isZero();
    assertThat(first.resetTime()).isEqualTo(NOW + 30_000);
    assertThat(second.status()).isEqualTo(Status.OVER_LIMIT);
    assertThat(store.size()).as("no bucket of its own needed").isZero();
  }

  @Test
  void answer_ownersWindowOver_fromABucketOfItsOwn() {
    standIns.ownerAnswered(standIns.sending(), hit(NOW), RateLimitResponse.of(Status.OVER_LIMIT, 10, 0, NOW + 5));

    RateLimitResponse answer = standIns.answer(standIns.sending(), hit(NOW + 5), MARK);

    assertThat(answer.status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(answer.remaining()).isEqualTo(9);
  }

  @Test
  void ownerAnswered_anError_notRemembered() {
    standIns.ownerAnswered(standIns.sending(), hit(NOW), RateLimitResponse.error("owner refused"));

    assertThat(standIns.answer(standIns.sending(), hit(NOW), MARK).remaining()).isEqualTo(9);
  }

  @Test
  void answer_overWithDrainOverLimit_leavesNothing() {
    standIns.ownerAnswered(standIns.sending(), hit(NOW), RateLimitResponse.of(Status.UNDER_LIMIT, 10, 3, NOW + 30_000));
    RateLimitRequest five =
        RateLimitRequest.builder("n", "k")
            .hits(5)
            .limit(10)
            .duration(60_000)
            .behavior(Behavior.DRAIN_OVER_LIMIT)
            .createdAt(NOW)
            .build();

    RateLimitResponse drained = standIns.answer(standIns.sending(), five, MARK);
    RateLimitResponse query = standIns.answer(standIns.sending(), five.withHits(0), MARK);

    assertThat(drained.status()).isEqualTo(Status.OVER_LIMIT);
    assertThat(drained.remaining()).isZero();
    assertThat(query.status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(query.remaining()).isZero();
  }

  @Test
  void ownerAnswered_anOlderAnswerArrivingLate_doesNotRaiseWhatIsLeft() {
    RateLimitResponse newer = RateLimitResponse.of(Status.UNDER_LIMIT, 10, 3, NOW + 30_000);
    RateLimitResponse older = RateLimitResponse.of(Status.UNDER_LIMIT, 10, 5, NOW + 30_000);
    RateLimitResponse previousWindow = RateLimitResponse.of(Status.OVER_LIMIT, 10, 0, NOW + 10);
    standIns.ownerAnswered(standIns.sending(), hit(NOW), newer);
    standIns.ownerAnswered(standIns.sending(), hit(NOW), older);
    standIns.ownerAnswered(standIns.sending(), hit(NOW), previousWindow);

    assertThat(standIns.answer(standIns.sending(), hit(NOW + 20), MARK).remaining()).isEqualTo(2);
  }

  @Test
  void ownerAnswered_theOwnersLastWordOfAnEarlierWindow_replacesMoreLeftOfALaterOne() {
    standIns.ownerAnswered(standIns.sending(), hit(NOW), RateLimitResponse.of(Status.UNDER_LIMIT, 10, 9, NOW + 40_000));
    standIns.ownerAnswered(standIns.sending(), hit(NOW), RateLimitResponse.of(Status.OVER_LIMIT, 10, 0, NOW + 30_000));

    RateLimitResponse answer = standIns.answer(standIns.sending(), hit(NOW + 20), MARK);

    assertThat(answer.status()).isEqualTo(Status.OVER_LIMIT);
    assertThat(answer.remaining()).isZero();
  }

  @Test
  void answer_hitsTakenFromAnEarlierWindow_alsoCountAgainstTheLaterOneStillOpen() {
    standIns.ownerAnswered(standIns.sending(), hit(NOW), RateLimitResponse.of(Status.UNDER_LIMIT, 10, 9, NOW + 40_000));
    standIns.ownerAnswered(standIns.sending(), hit(NOW), RateLimitResponse.of(Status.UNDER_LIMIT, 10, 1, NOW + 30_000));
    assertThat(standIns.answer(standIns.sending(), hit(NOW + 1), MARK).status()).isEqualTo(Status.UNDER_LIMIT);

    int admitted = 0;
    for (int i = 0; i < 10; i++) {
      if (standIns.answer(standIns.sending(), hit(NOW + 30_001), MARK).status() == Status.UNDER_LIMIT) {
        admitted++;
      }
    }

    assertThat(admitted)
        .as("admitted in the later window after 1 of its 9 was taken in the earlier one")
        .isEqualTo(8);
  }
}
