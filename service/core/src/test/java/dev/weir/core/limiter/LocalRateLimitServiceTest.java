package dev.weir.core.limiter;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.health.HealthStatus;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.LocalRateLimitService;
import java.time.ZoneOffset;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

class LocalRateLimitServiceTest {

  private final FakeClock clock = new FakeClock();
  private final LocalRateLimitService service =
      new LocalRateLimitService(
          new LocalLimiter(
              new RateLimitEngine(ZoneOffset.UTC), new InMemoryBucketStore(clock), clock),
          "10.0.0.1:1051");

  private static RateLimitRequest item(String name, String key) {
    return RateLimitRequest.builder(name, key).limit(10).duration(60_000).build();
  }

  @Test
  void check_emptyList_emptyResponse() {
    assertThat(service.decide(List.of()).join()).isEmpty();
  }

  @Test
  void check_1001Items_failsWithRequestTooLarge() {
    List<RateLimitRequest> items = Collections.nCopies(1001, item("n", "k"));

    assertThat(service.decide(items))
        .failsWithin(java.time.Duration.ZERO)
        .withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .havingCause()
        .isInstanceOf(RequestTooLargeException.class)
        .withMessage("Requests.RateLimits list too large; max size is '1000'");
  }

  @Test
  void check_1000Items_allAnswered() {
    List<RateLimitResponse> responses =
        service.decide(Collections.nCopies(1000, item("n", "k"))).join();

    assertThat(responses).hasSize(1000);
    assertThat(responses.get(9).status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(responses.get(10).status()).isEqualTo(Status.OVER_LIMIT);
  }

  @Test
  void check_emptyUniqueKeyAmongValidItems_itemErrorOthersAnswered() {
    List<RateLimitResponse> responses =
        service.decide(List.of(item("n", "a"), item("n", ""), item("n", "b"))).join();

    assertThat(responses)
        .extracting(RateLimitResponse::error)
        .containsExactly("", "field 'unique_key' cannot be empty", "");
    assertThat(responses.get(0).remaining()).isEqualTo(9);
    assertThat(responses.get(2).remaining()).isEqualTo(9);
    assertThat(responses.get(1))
        .isEqualTo(RateLimitResponse.error("field 'unique_key' cannot be empty"));
  }

  @Test
  void check_emptyName_namespaceError() {
    assertThat(service.decide(List.of(item("", "k"))).join().get(0).error())
        .isEqualTo("field 'namespace' cannot be empty");
  }

  @Test
  void check_emptyNameAndKey_uniqueKeyReportedFirst() {
    assertThat(service.decide(List.of(item("", ""))).join().get(0).error())
        .isEqualTo("field 'unique_key' cannot be empty");
  }

  @Test
  void check_sameKeyDifferentNames_separateBuckets() {
    RateLimitRequest a = RateLimitRequest.builder("a", "k").limit(1).duration(60_000).build();
    RateLimitRequest b = RateLimitRequest.builder("b", "k").limit(1).duration(60_000).build();

    List<RateLimitResponse> responses = service.decide(List.of(a, b, a)).join();

    assertThat(responses)
        .extracting(RateLimitResponse::status)
        .containsExactly(Status.UNDER_LIMIT, Status.UNDER_LIMIT, Status.OVER_LIMIT);
  }

  @Test
  void check_invalidAlgorithm_itemErrorOthersAnswered() {
    RateLimitRequest badAlgorithm =
        RateLimitRequest.builder("n", "k").limit(1).duration(1000).algorithmNumber(99).build();

    List<RateLimitResponse> responses =
        service.decide(List.of(badAlgorithm, item("n", "x"))).join();

    assertThat(responses.get(0).error()).isEqualTo("Invalid rate limit algorithm '99'");
    assertThat(responses.get(1).isError()).isFalse();
  }

  @Test
  void check_negativeLimit_itemErrorNamesField() {
    RateLimitRequest negative = RateLimitRequest.builder("n", "k").limit(-1).duration(1000).build();

    assertThat(service.decide(List.of(negative)).join().get(0).error())
        .isEqualTo("field 'limit' cannot be negative, got -1");
  }

  @Test
  void check_invalidGregorianCode_itemError() {
    RateLimitRequest gregorian =
        RateLimitRequest.builder("n", "k")
            .limit(1)
            .duration(9)
            .behavior(Behavior.DURATION_IS_GREGORIAN)
            .build();

    assertThat(service.decide(List.of(gregorian)).join().get(0).error())
        .isEqualTo(
            "behavior DURATION_IS_GREGORIAN is set; but `Duration` is not a valid gregorian"
                + " interval: got 9; allowed are 0 (minute), 1 (hour), 2 (day),"
                + " 3 (week), 4 (month), 5 (year)");
  }

  @Test
  void health_singleNode_healthyWithItself() {
    assertThat(service.health())
        .isEqualTo(new HealthStatus(true, "", 1, "10.0.0.1:1051", List.of("10.0.0.1:1051")));
  }
}
