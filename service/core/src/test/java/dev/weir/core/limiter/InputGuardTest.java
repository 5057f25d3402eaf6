package dev.weir.core.limiter;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.RecordingMetrics;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.Test;

class InputGuardTest {

  private final FakeClock clock = new FakeClock();
  private final InMemoryBucketStore store = new InMemoryBucketStore(clock);
  private final RecordingMetrics metrics = new RecordingMetrics();
  private final InputGuard guard =
      new InputGuard(
          new LocalRateLimitService(
              new LocalLimiter(new RateLimitEngine(ZoneOffset.UTC), store, clock), "a:1"),
          new InputLimits(65_536, 1024, 16, 8, 1, 1),
          metrics);

  private static RateLimitRequest item(String key) {
    return RateLimitRequest.builder("n", key).limit(5).duration(60_000).build();
  }

  @Test
  void check_overLongKeyAmongValid_itemErrorInPlaceOthersAnswered() {
    List<RateLimitResponse> answers =
        guard.check(List.of(item("a"), item("k".repeat(9)), item("b"))).join();

    assertThat(answers).extracting(RateLimitResponse::remaining).containsExactly(4L, 0L, 4L);
    assertThat(answers.get(1).error())
        .isEqualTo("field 'unique_key' is 9 bytes long; at most 8 are allowed (WEIR_MAX_KEY_LENGTH)");
    assertThat(store.size()).isEqualTo(2);
    assertThat(metrics.events()).containsExactly("refused field_too_long");
  }

  @Test
  void check_allValid_passedThroughUncounted() {
    assertThat(guard.check(List.of(item("a"))).join()).hasSize(1);
    assertThat(metrics.events()).isEmpty();
  }
}
