package dev.weir.core.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.limiter.LocalRateLimitService;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.RecordingMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.ZoneOffset;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

class MeteredRateLimitServiceTest {

  private final FakeClock clock = new FakeClock();
  private final RecordingMetrics metrics = new RecordingMetrics();
  private final LocalRateLimitService local =
      new LocalRateLimitService(
          new LocalLimiter(
              new RateLimitEngine(ZoneOffset.UTC), new InMemoryBucketStore(clock), clock),
          "10.0.0.1:1051");
  private final MeteredRateLimitService service = new MeteredRateLimitService(local, metrics);

  private static RateLimitRequest item(String key, long limit) {
    return RateLimitRequest.builder("n", key).limit(limit).duration(60_000).build();
  }

  @Test
  void check_underOverAndInvalidItems_eachResultCounted() {
    service.check(List.of(item("a", 1), item("a", 1), item("", 1))).join();

    assertThat(metrics.events())
        .containsExactly("checked under_limit", "checked over_limit", "checked error");
  }

  @Test
  void check_tooManyItems_refusalCounted() {
    service.check(Collections.nCopies(1001, item("a", 5)));

    assertThat(metrics.events()).containsExactly("refused too_many_items");
  }

  @Test
  void check_inFlightGauge_backToZeroAfterCall() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    MeteredRateLimitService metered =
        new MeteredRateLimitService(local, new MicrometerMetrics(registry));

    metered.check(List.of(item("a", 1))).join();

    assertThat(registry.get(MicrometerMetrics.CHECKS_IN_FLIGHT).gauge().value()).isZero();
    assertThat(registry.get(MicrometerMetrics.CHECKS).tag("result", "under_limit").counter().count())
        .isEqualTo(1);
  }
}
