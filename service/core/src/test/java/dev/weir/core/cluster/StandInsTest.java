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
    Decision d = owner.apply(ownerState, r, r.createdAt());
    ownerState = d.next();
    standIns.ownerAnswered(r, d.response());
    return d.response();
  }

  /**
   * Returns the stand-in's status for {@code r}, asserting that the owner's engine, applying the
   * same requests, answers {@code r} with that status and at least as many left.
   */
  private Status standIn(RateLimitRequest r) {
    Decision d = owner.apply(ownerState, r, r.createdAt());
    ownerState = d.next();
    RateLimitResponse answer = standIns.answer(r, MARK);
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
    standIns.ownerAnswered(r, RateLimitResponse.of(Status.OVER_LIMIT, 10, 0, NOW + 30_000));

    RateLimitResponse first = standIns.answer(r.withHits(0), MARK);
    RateLimitResponse second = standIns.answer(r.withHits(0), MARK);

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
    standIns.ownerAnswered(r, RateLimitResponse.of(Status.OVER_LIMIT, 10, 0, NOW + 30_000));
    standIns.ownerAnswered(r, RateLimitResponse.of(Status.UNDER_LIMIT, 10, 0, NOW + 30_000));

    assertThat(standIns.answer(r.withHits(0), MARK).status()).isEqualTo(Status.OVER_LIMIT);
  }

  @Test
  void answer_ownerNeverAnswered_fromABucketOfItsOwnUnderThePrefixedName() {
    RateLimitResponse answer = standIns.answer(hit(NOW), MARK);

    assertThat(answer.status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(answer.remaining()).isEqualTo(9);
    assertThat(answer.metadata()).isEqualTo(MARK);
    assertThat(store.get(StandIns.PREFIX + "n_k")).isPresent();
  }

  @Test
  void answer_ownerLastLeftOne_oneMoreAdmittedThenOverTheLimit() {
    standIns.ownerAnswered(hit(NOW), RateLimitResponse.of(Status.UNDER_LIMIT, 10, 1, NOW + 30_000));

    RateLimitResponse first = standIns.answer(hit(NOW + 1), MARK);
    RateLimitResponse second = standIns.answer(hit(NOW + 2), MARK);

    assertThat(first.status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(first.remaining()).isZero();
    assertThat(first.resetTime()).isEqualTo(NOW + 30_000);
    assertThat(second.status()).isEqualTo(Status.OVER_LIMIT);
    assertThat(store.size()).as("no bucket of its own needed").isZero();
  }

  @Test
  void answer_ownersWindowOver_fromABucketOfItsOwn() {
    standIns.ownerAnswered(hit(NOW), RateLimitResponse.of(Status.OVER_LIMIT, 10, 0, NOW + 5));

    RateLimitResponse answer = standIns.answer(hit(NOW + 5), MARK);

    assertThat(answer.status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(answer.remaining()).isEqualTo(9);
  }

  @Test
  void ownerAnswered_anError_notRemembered() {
    standIns.ownerAnswered(hit(NOW), RateLimitResponse.error("owner refused"));

    assertThat(standIns.answer(hit(NOW), MARK).remaining()).isEqualTo(9);
  }

  @Test
  void answer_overWithDrainOverLimit_leavesNothing() {
    standIns.ownerAnswered(hit(NOW), RateLimitResponse.of(Status.UNDER_LIMIT, 10, 3, NOW + 30_000));
    RateLimitRequest five =
        RateLimitRequest.builder("n", "k")
            .hits(5)
            .limit(10)
            .duration(60_000)
            .behavior(Behavior.DRAIN_OVER_LIMIT)
            .createdAt(NOW)
            .build();

    RateLimitResponse drained = standIns.answer(five, MARK);
    RateLimitResponse query = standIns.answer(five.withHits(0), MARK);

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
    standIns.ownerAnswered(hit(NOW), newer);
    standIns.ownerAnswered(hit(NOW), older);
    standIns.ownerAnswered(hit(NOW), previousWindow);

    assertThat(standIns.answer(hit(NOW + 20), MARK).remaining()).isEqualTo(2);
  }

  @Test
  void ownerAnswered_theOwnersLastWordOfAnEarlierWindow_replacesMoreLeftOfALaterOne() {
    standIns.ownerAnswered(hit(NOW), RateLimitResponse.of(Status.UNDER_LIMIT, 10, 9, NOW + 40_000));
    standIns.ownerAnswered(hit(NOW), RateLimitResponse.of(Status.OVER_LIMIT, 10, 0, NOW + 30_000));

    RateLimitResponse answer = standIns.answer(hit(NOW + 20), MARK);

    assertThat(answer.status()).isEqualTo(Status.OVER_LIMIT);
    assertThat(answer.remaining()).isZero();
  }

  @Test
  void answer_hitsTakenFromAnEarlierWindow_alsoCountAgainstTheLaterOneStillOpen() {
    standIns.ownerAnswered(hit(NOW), RateLimitResponse.of(Status.UNDER_LIMIT, 10, 9, NOW + 40_000));
    standIns.ownerAnswered(hit(NOW), RateLimitResponse.of(Status.UNDER_LIMIT, 10, 1, NOW + 30_000));
    assertThat(standIns.answer(hit(NOW + 1), MARK).status()).isEqualTo(Status.UNDER_LIMIT);

    int admitted = 0;
    for (int i = 0; i < 10; i++) {
      if (standIns.answer(hit(NOW + 30_001), MARK).status() == Status.UNDER_LIMIT) {
        admitted++;
      }
    }

    assertThat(admitted)
        .as("admitted in the later window after 1 of its 9 was taken in the earlier one")
        .isEqualTo(8);
  }
}
