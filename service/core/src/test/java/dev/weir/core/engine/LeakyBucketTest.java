package dev.weir.core.engine;

import static dev.weir.core.engine.Requests.NOW;
import static dev.weir.core.engine.Requests.leaky;
import static dev.weir.core.engine.Step.at;
import static dev.weir.core.model.Status.OVER_LIMIT;
import static dev.weir.core.model.Status.UNDER_LIMIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.params.provider.Arguments.arguments;

import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitResponse;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class LeakyBucketTest {

  private static final int DRAIN = Behavior.DRAIN_OVER_LIMIT;
  private static final int RESET = Behavior.RESET_REMAINING;
  private static final int GREGORIAN = Behavior.DURATION_IS_GREGORIAN;

  static Stream<Arguments> table() {
    return Stream.of(
        arguments(
            "new bucket starts at burst; reset_time is when remaining is back to limit",
            List.of(
                at(0, leaky(10, 1000, 1), UNDER_LIMIT, 9, 100),
                at(0, leaky(10, 1000, 4), UNDER_LIMIT, 5, 500),
                at(250, leaky(10, 1000, 0), UNDER_LIMIT, 7, 550))),
        arguments(
            "hits above burst on a new bucket: OVER, and the bucket starts empty",
            List.of(
                at(0, leaky(10, 1000, 11), OVER_LIMIT, 0, 1000),
                at(100, leaky(10, 1000, 1), UNDER_LIMIT, 0, 1100))),
        arguments(
            "limit 10 burst 20 (Gubernator's burst case), reset_time never in the past",
            List.of(
                at(0, leaky(10, 30_000, 20, 1, 0), UNDER_LIMIT, 19, 0),
                at(0, leaky(10, 30_000, 20, 19, 0), UNDER_LIMIT, 0, 30_000),
                at(3000, leaky(10, 30_000, 20, 0, 0), UNDER_LIMIT, 1, 30_000),
                at(3000, leaky(10, 30_000, 20, 2, 0), OVER_LIMIT, 1, 30_000))),
        arguments(
            "RESET_REMAINING refills to burst and then applies the hits",
            List.of(
                at(0, leaky(10, 1000, 7), UNDER_LIMIT, 3, 700),
                at(1, leaky(10, 1000, 0, 2, RESET), UNDER_LIMIT, 8, 201))),
        arguments(
            "a raised burst refills the bucket, a lowered one caps it",
            List.of(
                at(0, leaky(10, 1000, 7), UNDER_LIMIT, 3, 700),
                at(1, leaky(10, 1000, 20, 0, 0), UNDER_LIMIT, 20, 1),
                at(2, leaky(10, 1000, 5, 0, 0), UNDER_LIMIT, 5, 502))),
        arguments(
            "tokens leak one per 100 ms; the part of a token already leaked is kept",
            List.of(
                at(0, leaky(10, 1000, 10), UNDER_LIMIT, 0, 1000),
                at(150, leaky(10, 1000, 0), UNDER_LIMIT, 1, 1050),
                at(200, leaky(10, 1000, 0), UNDER_LIMIT, 2, 1000),
                at(250, leaky(10, 1000, 2), UNDER_LIMIT, 0, 1250))),
        arguments(
            "a query of an empty bucket is UNDER; a hit is OVER",
            List.of(
                at(0, leaky(10, 1000, 10), UNDER_LIMIT, 0, 1000),
                at(1, leaky(10, 1000, 0), UNDER_LIMIT, 0, 1001),
                at(2, leaky(10, 1000, 1), OVER_LIMIT, 0, 1002))),
        arguments(
            "DRAIN_OVER_LIMIT empties the bucket, which then refills by leaking",
            List.of(
                at(0, leaky(10, 1000, 5), UNDER_LIMIT, 5, 500),
                at(1, leaky(10, 1000, 0, 6, DRAIN), OVER_LIMIT, 0, 501),
                at(101, leaky(10, 1000, 0), UNDER_LIMIT, 1, 1001))),
        arguments(
            "a longer duration applies from now; the tokens already leaked stay",
            List.of(
                at(0, leaky(3, 1000, 3), UNDER_LIMIT, 0, 999),
                at(999, leaky(3, 1000, 1), UNDER_LIMIT, 1, 1665),
                at(999, leaky(3, 3000, 0), UNDER_LIMIT, 1, 2999))),
        arguments(
            "a shorter duration applies from now; the time before leaks at the old rate",
            List.of(
                at(0, leaky(10, 1000, 10), UNDER_LIMIT, 0, 1000),
                at(500, leaky(10, 500, 1), UNDER_LIMIT, 4, 800))),
        arguments(
            "a shorter duration leaks nothing for the 50 ms that leak no token at the old rate",
            List.of(
                at(0, leaky(10, 1000, 10), UNDER_LIMIT, 0, 1000),
                at(50, leaky(10, 500, 1), OVER_LIMIT, 0, 550))),
        arguments(
            "plain milliseconds after a Gregorian day leak at one day per limit, not the code",
            List.of(
                at(0, leaky(100, 2, 0, 100, GREGORIAN), UNDER_LIMIT, 0, 86_400_000),
                at(10, leaky(100, 86_400_000, 1), OVER_LIMIT, 0, 86_400_010))),
        arguments(
            "plain milliseconds after a Gregorian hour leak at one hour per limit, not the code",
            List.of(
                at(0, leaky(100, 1, 0, 100, GREGORIAN), UNDER_LIMIT, 0, 3_600_000),
                at(10, leaky(100, 3_600_000, 1), OVER_LIMIT, 0, 3_600_010))),
        arguments(
            "a request stamped before the last one never sees fewer than 0 tokens",
            List.of(
                at(0, leaky(60, 1000, 60), UNDER_LIMIT, 0, 960),
                at(40, leaky(60, 1000, 2), UNDER_LIMIT, 0, 1000),
                at(33, leaky(60, 1000, 0), UNDER_LIMIT, 0, 993))),
        arguments(
            "DRAIN of a request stamped before the last one adds no token",
            List.of(
                at(0, leaky(60, 1000, 60), UNDER_LIMIT, 0, 960),
                at(40, leaky(60, 1000, 2), UNDER_LIMIT, 0, 1000),
                at(33, leaky(60, 1000, 60, 1, DRAIN), OVER_LIMIT, 0, 993),
                at(40, leaky(60, 1000, 0), UNDER_LIMIT, 0, 1000))),
        arguments(
            "a refund stamped before the last request gives its token back (2500 per second)",
            List.of(
                at(0, leaky(2500, 1000, 2500), UNDER_LIMIT, 0, 1000),
                at(1, leaky(2500, 1000, 2), UNDER_LIMIT, 0, 1001),
                at(0, leaky(2500, 1000, -1), UNDER_LIMIT, 0, 1000),
                at(1, leaky(2500, 1000, 0), UNDER_LIMIT, 1, 1001))),
        arguments(
            "a refused request without DRAIN consumes nothing",
            List.of(
                at(0, leaky(10, 1000, 5), UNDER_LIMIT, 5, 500),
                at(1, leaky(10, 1000, 6), OVER_LIMIT, 5, 501),
                at(2, leaky(10, 1000, 5), UNDER_LIMIT, 0, 1002))),
        arguments(
            "negative hits add tokens above burst until the next request caps them",
            List.of(
                at(0, leaky(10, 1000, 2), UNDER_LIMIT, 8, 200),
                at(1, leaky(10, 1000, -5), UNDER_LIMIT, 13, 1),
                at(2, leaky(10, 1000, 0), UNDER_LIMIT, 10, 2))),
        arguments(
            "3 per second leaks exactly 3 tokens a second, however often it is read",
            List.of(
                at(0, leaky(3, 1000, 3), UNDER_LIMIT, 0, 999),
                at(500, leaky(3, 1000, 0), UNDER_LIMIT, 1, 1166),
                at(1000, leaky(3, 1000, 0), UNDER_LIMIT, 3, 1000))),
        arguments(
            "2000 per second (half a millisecond a token): exact leak and reset_time",
            List.of(
                at(0, leaky(2000, 1000, 2000), UNDER_LIMIT, 0, 1000),
                at(1, leaky(2000, 1000, 0), UNDER_LIMIT, 2, 1000))),
        arguments(
            "1500 per second: floor(elapsed * 1.5) tokens at every read",
            List.of(
                at(0, leaky(1500, 1000, 1500), UNDER_LIMIT, 0, 1000),
                at(1, leaky(1500, 1000, 0), UNDER_LIMIT, 1, 1001),
                at(2, leaky(1500, 1000, 0), UNDER_LIMIT, 3, 1000),
                at(3, leaky(1500, 1000, 0), UNDER_LIMIT, 4, 1001),
                at(3, leaky(1500, 1000, 4), UNDER_LIMIT, 0, 1003),
                at(5, leaky(1500, 1000, 0), UNDER_LIMIT, 3, 1003))),
        arguments(
            "limit 0 never leaks; with burst 0 every hit is OVER",
            List.of(
                at(0, leaky(0, 1000, 1), OVER_LIMIT, 0, 0),
                at(500, leaky(0, 1000, 0), UNDER_LIMIT, 0, 500))));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("table")
  void apply_table_matchesGubernator(String name, List<Step> steps) {
    Step.run(new Scenario(), steps);
  }

  @Test
  void apply_nonZeroHits_slideExpiryButQueriesDoNot() {
    Scenario s = new Scenario();
    s.send(leaky(10, 1000, 1), NOW);
    assertThat(s.state().expireAt()).isEqualTo(NOW + 1001);
    s.send(leaky(10, 1000, 1), NOW + 900);
    assertThat(s.state().expireAt()).isEqualTo(NOW + 1901);
    s.send(leaky(10, 1000, 0), NOW + 1500);
    assertThat(s.state().expireAt()).isEqualTo(NOW + 1901);
    s.send(leaky(10, 1000, -1), NOW + 1600);
    assertThat(s.state().expireAt()).isEqualTo(NOW + 2601);
  }

  @Test
  void apply_queryWithShorterDuration_endsTheBucketWithinTheNewDuration() {
    Scenario s = new Scenario();
    s.send(leaky(10, 1000, 1), NOW);
    s.send(leaky(10, 100, 0), NOW + 10);
    assertThat(s.state().expireAt()).isEqualTo(NOW + 111);
  }

  @Test
  void apply_queryAfterGregorianWeek_endsTheBucketWithinTheNewDuration() {
    Scenario s = new Scenario();
    s.send(leaky(10, 3, 0, 1, Behavior.DURATION_IS_GREGORIAN), NOW);
    s.send(leaky(10, 60_000, 0), NOW);
    assertThat(s.state().expireAt()).isEqualTo(NOW + 60_001);
  }

  @Test
  void apply_plainDurationEqualToTheLastGregorianCode_endsTheBucketWithinThePlainDuration() {
    Scenario s = new Scenario();
    s.send(leaky(10, 5, 10, 1, GREGORIAN), NOW);
    s.send(leaky(10, 5, 10, 1, 0), NOW + 1);
    assertThat(s.state().expireAt()).as("hit of 5 ms after a year").isEqualTo(NOW + 7);
    s.send(leaky(10, 5, 10, 1, GREGORIAN), NOW + 2);
    s.send(leaky(10, 5, 10, 0, 0), NOW + 3);
    assertThat(s.state().expireAt()).as("query of 5 ms after a year").isEqualTo(NOW + 9);
  }

  @Test
  void apply_queryStampedBeforeTheLastHit_keepsTheBucketsEnd() {
    Scenario s = new Scenario();
    s.send(leaky(10, 1000, 100, 100, 0), NOW);
    s.send(leaky(10, 1000, 100, 5, 0), NOW + 500);
    s.send(leaky(10, 1000, 100, 0, 0), NOW);
    assertThat(s.state().expireAt()).isEqualTo(NOW + 1501);
    assertThat(s.send(leaky(10, 1000, 100, 7, 0), NOW + 1100))
        .as("6 tokens leaked since the last hit; a new bucket would hold 100")
        .isEqualTo(RateLimitResponse.of(OVER_LIMIT, 10, 6, NOW + 1500));
  }

  @Test
  void apply_hitStampedBeforeTheLastHit_doesNotBringTheBucketsEndNearer() {
    Scenario s = new Scenario();
    s.send(leaky(10, 1000, 100, 100, 0), NOW);
    s.send(leaky(10, 1000, 100, 5, 0), NOW + 500);
    s.send(leaky(10, 1000, 100, 1, 0), NOW);
    assertThat(s.state().expireAt()).isEqualTo(NOW + 1501);
    assertThat(s.send(leaky(10, 1000, 100, 7, 0), NOW + 1100))
        .as("6 tokens leaked since the last hit; a new bucket would hold 100")
        .isEqualTo(RateLimitResponse.of(OVER_LIMIT, 10, 6, NOW + 1500));
  }

  @Test
  void apply_hitWithAnotherDuration_setsTheEndFromItsOwnTime() {
    Scenario s = new Scenario();
    s.send(leaky(10, 1000, 1), NOW);
    s.send(leaky(10, 100, 1), NOW + 10);
    assertThat(s.state().expireAt()).isEqualTo(NOW + 111);
  }

  @Test
  void apply_idleBucket_isNewAfterExpiry() {
    Scenario s = new Scenario();
    s.send(leaky(10, 1000, 20, 20, 0), NOW);
    assertThat(s.send(leaky(10, 1000, 20, 0, 0), NOW + 1000).remaining()).isEqualTo(10);
    assertThat(s.send(leaky(10, 1000, 20, 0, 0), NOW + 1001).remaining()).isEqualTo(20);
  }

  @Test
  void apply_integralRate_storesTheReportedRemaining() {
    Scenario s = new Scenario();
    s.send(leaky(10, 1000, 10), NOW);
    s.send(leaky(10, 1000, 1), NOW + 250);
    assertThat(s.state()).isEqualTo(new LeakyBucketState(10, 1000, 10, 1, NOW + 200, NOW + 1251));
  }

  @Test
  void apply_queriesAlternatingLimitMoreOftenThanATokenLeaks_stillRefill() {
    Scenario s = new Scenario();
    s.send(leaky(10, 1000, 10, 10, 0), NOW);
    RateLimitResponse last = null;
    for (long t = 40; t <= 1000; t += 40) {
      last = s.send(leaky(t % 80 == 0 ? 10 : 20, 1000, 10, 0, 0), NOW + t);
    }
    assertThat(last.remaining()).as("remaining at +1000 ms").isPositive();
  }

  @Test
  void apply_rateChangeWhoseTimeLeaksATokenAtTheNewRate_doesNotLeakThatTimeAgainLater() {
    Scenario s = new Scenario();
    s.send(leaky(10, 60_000, 0), NOW);
    assertThat(s.send(leaky(10, 1000, 10), NOW + 5000).status()).isEqualTo(UNDER_LIMIT);
    assertThat(s.send(leaky(10, 1000, 10), NOW + 5001).status())
        .as("20 tokens within 1 ms of a bucket whose burst is 10")
        .isEqualTo(OVER_LIMIT);
  }

  @Test
  void apply_fullBucket_restartsLeakGridAtNow() {
    Scenario s = new Scenario();
    s.send(leaky(10, 1000, 1), NOW);
    s.send(leaky(10, 1000, 0), NOW + 250);
    assertThat(((LeakyBucketState) s.state()).updatedAt()).isEqualTo(NOW + 250);
    assertThat(((LeakyBucketState) s.state()).remaining()).isEqualTo(10);
  }
}
