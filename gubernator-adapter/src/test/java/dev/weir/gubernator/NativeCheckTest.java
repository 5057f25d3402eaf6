package dev.weir.gubernator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.limiter.RequestTooLargeException;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.model.Behavior;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.LocalRateLimitService;
import dev.weir.core.testkit.RecordingMetrics;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import java.time.ZoneOffset;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class NativeCheckTest {

  private final FakeClock clock = new FakeClock();
  private final InMemoryBucketStore store = new InMemoryBucketStore(clock);
  private final RecordingMetrics metrics = new RecordingMetrics();
  private final NativeCheck check =
      new NativeCheck(
          new LocalRateLimitService(
              new LocalLimiter(new RateLimitEngine(ZoneOffset.UTC), store, clock), "a:1"),
          new InputLimits(65_536, 1024, 16, 8, 1, 1),
          new CheckMeter(metrics));

  private static RateLimitReq item(String key) {
    return RateLimitReq.newBuilder()
        .setName("n")
        .setUniqueKey(key)
        .setHits(1)
        .setLimit(5)
        .setDuration(60_000)
        .build();
  }

  private static GetRateLimitsReq call(RateLimitReq... items) {
    GetRateLimitsReq.Builder b = GetRateLimitsReq.newBuilder();
    for (RateLimitReq item : items) {
      b.addRequests(item);
    }
    return b.build();
  }

  @Test
  void check_overLongKeyAmongValid_itemErrorInPlaceOthersAnsweredAndCounted() {
    GetRateLimitsResp answer = check.decide(call(item("a"), item("k".repeat(9)), item("b"))).join();

    assertThat(answer.getResponsesList())
        .extracting(RateLimitResp::getRemaining)
        .containsExactly(4L, 0L, 4L);
    assertThat(answer.getResponses(1).getError())
        .isEqualTo("field 'unique_key' is 9 bytes long; at most 8 are allowed (WEIR_MAX_KEY_LENGTH)");
    assertThat(store.size()).isEqualTo(2);
    assertThat(metrics.events())
        .containsExactly(
            "refused field_too_long", "checked under_limit", "checked under_limit", "checked error");
  }

  @Test
  void check_everyItemTooLong_eachAnsweredWithAnErrorAndCountedAsError() {
    GetRateLimitsResp answer =
        check.decide(call(item("k".repeat(9)), item("a").toBuilder().setName("n".repeat(17)).build()))
            .join();

    assertThat(answer.getResponsesList()).extracting(RateLimitResp::getError).doesNotContain("");
    assertThat(metrics.count("refused field_too_long")).isEqualTo(2);
    assertThat(metrics.count("checked error")).as("a user sees an error answer").isEqualTo(2);
    assertThat(store.size()).isZero();
  }

  @Test
  void check_localItems_completeOnTheCallingThread() {
    CompletableFuture<GetRateLimitsResp> answer = check.decide(call(item("a")));

    assertThat(answer).isCompletedWithValueMatching(r -> r.getResponses(0).getRemaining() == 4);
  }

  @Test
  void check_tooManyItems_failsWithGubernatorsMessageAndCounts() {
    GetRateLimitsReq tooMany = call(Collections.nCopies(1001, item("a")).toArray(new RateLimitReq[0]));

    assertThatThrownBy(() -> check.decide(tooMany).join())
        .hasCauseInstanceOf(RequestTooLargeException.class)
        .hasMessageContaining("max size is '1000'");
    assertThat(metrics.events()).containsExactly("refused too_many_items");
    assertThat(store.size()).isZero();
  }

  @Test
  void refuseTooManyItems_failsAsTooManyItemsDoAndCounts() {
    assertThatThrownBy(() -> check.refuseTooManyItems().join())
        .hasCauseInstanceOf(RequestTooLargeException.class)
        .hasMessageContaining("max size is '1000'");
    assertThat(metrics.events()).containsExactly("refused too_many_items");
  }

  @Test
  void check_tooLongNameAndEmptyKey_saysTheKeyIsEmptyFirst() {
    RateLimitReq item = item("").toBuilder().setName("n".repeat(17)).build();

    GetRateLimitsResp answer = check.decide(call(item)).join();

    assertThat(answer.getResponses(0).getError()).isEqualTo("field 'unique_key' cannot be empty");
  }

  @Test
  void check_emptyNameAndTooLongKey_saysTheNamespaceIsEmptyFirst() {
    RateLimitReq item = item("k".repeat(17)).toBuilder().setName("").build();

    GetRateLimitsResp answer = check.decide(call(item)).join();

    assertThat(answer.getResponses(0).getError()).isEqualTo("field 'namespace' cannot be empty");
  }

  @Test
  void check_gregorianItemOverLimit_namesItsCalendarIntervalBesideTheCode() {
    RateLimitReq hourly =
        item("a").toBuilder().setLimit(0).setDuration(1).setBehaviorValue(Behavior.DURATION_IS_GREGORIAN).build();
    RateLimitReq perMinute = item("b").toBuilder().setLimit(0).build();

    GetRateLimitsResp answer = check.decide(call(hourly, perMinute)).join();

    assertThat(answer.getResponses(0).getMetadataMap())
        .containsEntry("over_limit.duration", "1")
        .containsEntry("over_limit.gregorian", "hours");
    assertThat(answer.getResponses(1).getMetadataMap())
        .containsEntry("over_limit.duration", "60000")
        .doesNotContainKey("over_limit.gregorian");
  }

  @Test
  void check_queryOfAStoredOverLimitBucket_notRecordedAsLimited() {
    List<String> recorded = new CopyOnWriteArrayList<>();
    NativeCheck recording =
        new NativeCheck(
            new LocalRateLimitService(
                new LocalLimiter(new RateLimitEngine(ZoneOffset.UTC), store, clock), "a:1"),
            InputLimits.DEFAULTS,
            new CheckMeter(metrics),
            (key, hits) -> recorded.add(key.rule() + " " + key.entries() + " " + hits));
    RateLimitReq one = item("k").toBuilder().setLimit(1).build();

    for (long hits : new long[] {1, 1, 0, -1}) {
      recording.decide(call(one.toBuilder().setHits(hits).build())).join();
    }
    RateLimitResp query =
        recording.decide(call(one.toBuilder().setHits(0).build())).join().getResponses(0);

    assertThat(query.getStatus()).isEqualTo(dev.weir.proto.gubernator.Status.OVER_LIMIT);
    assertThat(query.getMetadataMap()).containsEntry("over_limit.name", "n");
    assertThat(recorded).containsExactly("n [unique_key, k] 1");
    assertThat(metrics.events())
        .containsExactly(
            "checked under_limit",
            "checked over_limit",
            "checked under_limit",
            "checked under_limit",
            "checked under_limit");
  }
}
