package dev.weir.core.engine;

import static dev.weir.core.engine.Requests.NOW;
import static dev.weir.core.engine.Requests.token;
import static dev.weir.core.engine.Step.at;
import static dev.weir.core.model.Status.OVER_LIMIT;
import static dev.weir.core.model.Status.UNDER_LIMIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.params.provider.Arguments.arguments;

import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class TokenBucketTest {

  private static final int DRAIN = Behavior.DRAIN_OVER_LIMIT;
  private static final int RESET = Behavior.RESET_REMAINING;

  static Stream<Arguments> table() {
    return Stream.of(
        arguments(
            "new bucket takes hits and ends its window duration after the first hit",
            List.of(
                at(0, token(10, 1000, 1), UNDER_LIMIT, 9, 1000),
                at(400, token(10, 1000, 2), UNDER_LIMIT, 7, 1000))),
        arguments(
            "hits above the limit on a new bucket: OVER, remaining = limit, nothing consumed",
            List.of(
                at(0, token(10, 1000, 11), OVER_LIMIT, 10, 1000),
                at(1, token(10, 1000, 10), UNDER_LIMIT, 0, 1000))),
        arguments(
            "hits == remaining empties the bucket and stays UNDER; the next hit is OVER",
            List.of(
                at(0, token(10, 1000, 5), UNDER_LIMIT, 5, 1000),
                at(1, token(10, 1000, 5), UNDER_LIMIT, 0, 1000),
                at(2, token(10, 1000, 0), UNDER_LIMIT, 0, 1000),
                at(3, token(10, 1000, 1), OVER_LIMIT, 0, 1000))),
        arguments(
            "OVER_LIMIT after an empty bucket sticks for hits=0 queries until the window ends",
            List.of(
                at(0, token(2, 1000, 2), UNDER_LIMIT, 0, 1000),
                at(1, token(2, 1000, 1), OVER_LIMIT, 0, 1000),
                at(2, token(2, 1000, 0), OVER_LIMIT, 0, 1000),
                at(1001, token(2, 1000, 0), UNDER_LIMIT, 2, 2001))),
        arguments(
            "hits above remaining are refused without consuming; smaller ones still pass",
            List.of(
                at(0, token(10, 1000, 5), UNDER_LIMIT, 5, 1000),
                at(1, token(10, 1000, 6), OVER_LIMIT, 5, 1000),
                at(2, token(10, 1000, 0), UNDER_LIMIT, 5, 1000),
                at(3, token(10, 1000, 4), UNDER_LIMIT, 1, 1000))),
        arguments(
            "DRAIN_OVER_LIMIT empties the bucket on a refused request; status is not stored",
            List.of(
                at(0, token(10, 1000, 5), UNDER_LIMIT, 5, 1000),
                at(1, token(10, 1000, 6, DRAIN), OVER_LIMIT, 0, 1000),
                at(2, token(10, 1000, 0), UNDER_LIMIT, 0, 1000),
                at(3, token(10, 1000, 1), OVER_LIMIT, 0, 1000))),
        arguments(
            "RESET_REMAINING removes the bucket; the next request opens a fresh window",
            List.of(
                at(0, token(10, 1000, 8), UNDER_LIMIT, 2, 1000),
                Step.atAbsolute(5, token(10, 1000, 3, RESET), UNDER_LIMIT, 10, 0),
                at(6, token(10, 1000, 1), UNDER_LIMIT, 9, 1006))),
        arguments(
            "a raised limit adds the difference to remaining; a lowered one floors at 0",
            List.of(
                at(0, token(10, 1000, 6), UNDER_LIMIT, 4, 1000),
                at(1, token(20, 1000, 0), UNDER_LIMIT, 14, 1000),
                at(2, token(5, 1000, 0), UNDER_LIMIT, 0, 1000),
                at(3, token(5, 1000, 1), OVER_LIMIT, 0, 1000))),
        arguments(
            "a shorter duration that already passed renews the window at now",
            List.of(
                at(0, token(10, 1000, 6), UNDER_LIMIT, 4, 1000),
                at(600, token(10, 500, 1), UNDER_LIMIT, 9, 1100))),
        arguments(
            "a query renewing the window answers the old remaining, as Gubernator answers",
            List.of(
                at(0, token(10, 1000, 6), UNDER_LIMIT, 4, 1000),
                at(600, token(10, 500, 0), UNDER_LIMIT, 4, 1100),
                at(601, token(10, 500, 0), UNDER_LIMIT, 10, 1100))),
        arguments(
            "an empty bucket renewed by a shorter duration is OVER, and the status sticks",
            List.of(
                at(0, token(10, 1000, 10), UNDER_LIMIT, 0, 1000),
                at(600, token(10, 500, 1), OVER_LIMIT, 0, 1100),
                at(601, token(10, 500, 1), OVER_LIMIT, 9, 1100))),
        arguments(
            "hits above the renewed window's remaining are refused with the old remaining",
            List.of(
                at(0, token(10, 1000, 6), UNDER_LIMIT, 4, 1000),
                at(600, token(10, 500, 11), OVER_LIMIT, 4, 1100),
                at(601, token(10, 500, 10), UNDER_LIMIT, 0, 1100))),
        arguments(
            "a longer duration moves the window end from the first hit, keeping remaining",
            List.of(
                at(0, token(10, 1000, 6), UNDER_LIMIT, 4, 1000),
                at(600, token(10, 5000, 1), UNDER_LIMIT, 3, 5000))),
        arguments(
            "negative hits give tokens back without a cap at the limit",
            List.of(
                at(0, token(10, 1000, -3), UNDER_LIMIT, 13, 1000),
                at(1, token(10, 1000, 10), UNDER_LIMIT, 3, 1000),
                at(2, token(10, 1000, -2), UNDER_LIMIT, 5, 1000))),
        arguments(
            "negative hits on an empty bucket refill it",
            List.of(
                at(0, token(1, 1000, 1), UNDER_LIMIT, 0, 1000),
                at(1, token(1, 1000, -1), UNDER_LIMIT, 1, 1000))),
        arguments(
            "the window is live through reset_time and renewed one millisecond later",
            List.of(
                at(0, token(1, 1000, 1), UNDER_LIMIT, 0, 1000),
                at(1000, token(1, 1000, 1), OVER_LIMIT, 0, 1000),
                at(1001, token(1, 1000, 1), UNDER_LIMIT, 0, 2001))),
        arguments(
            "limit 0: every hit is OVER, queries are UNDER",
            List.of(
                at(0, token(0, 1000, 1), OVER_LIMIT, 0, 1000),
                at(1, token(0, 1000, 0), UNDER_LIMIT, 0, 1000))),
        arguments(
            "duration 0: the window lives for the millisecond of its first hit",
            List.of(
                at(0, token(2, 0, 1), UNDER_LIMIT, 1, 0),
                at(0, token(2, 0, 1), UNDER_LIMIT, 0, 0),
                at(1, token(2, 0, 1), UNDER_LIMIT, 1, 1))));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("table")
  void apply_table_matchesGubernator(String name, List<Step> steps) {
    Step.run(new Scenario(), steps);
  }

  @Test
  void apply_resetRemaining_deletesTheBucket() {
    Scenario s = new Scenario();
    s.send(token(10, 1000, 1), NOW);
    RateLimitResponse r = s.send(token(10, 1000, 1, RESET), NOW + 1);
    assertThat(r).isEqualTo(RateLimitResponse.of(UNDER_LIMIT, 10, 10, 0));
    assertThat(s.state()).isNull();
  }

  @Test
  void apply_newBucket_storesExpiryOneAfterResetTime() {
    Scenario s = new Scenario();
    s.send(token(10, 1000, 1), NOW);
    assertThat(s.state())
        .isEqualTo(new TokenBucketState(Status.UNDER_LIMIT, 10, 1000, 9, NOW, NOW + 1001));
    assertThat(RateLimitEngine.tokenBucketResetTime((TokenBucketState) s.state()))
        .isEqualTo(NOW + 1000);
    assertThat(RateLimitEngine.tokenBucketExpireAt(NOW + 1000)).isEqualTo(NOW + 1001);
  }

  @Test
  void apply_stickyOverThenLimitRaised_admitsButReportsStoredStatus() {
    Scenario s = new Scenario();
    s.send(token(1, 1000, 1), NOW);
    s.send(token(1, 1000, 1), NOW + 1);
    RateLimitResponse r = s.send(token(3, 1000, 1), NOW + 2);
    assertThat(r).isEqualTo(RateLimitResponse.of(OVER_LIMIT, 3, 1, NOW + 1000));
  }
}
