package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.WindowCounterCheck;
import java.util.Map;
import org.junit.jupiter.api.Test;

class StandInsTest {

  private static final long NOW = 1_000_000;
  private static final Map<String, String> MARK = Map.of("stand_in", "true");

  private final InMemoryBucketStore store = new InMemoryBucketStore(new FakeClock(NOW));
  private final StandIns standIns = new StandIns(new WindowCounterCheck(store));

  private static RateLimitRequest hit(long at) {
    return RateLimitRequest.builder("n", "k").hits(1).limit(10).duration(60_000).createdAt(at).build();
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
