package dev.weir.metrics.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.limiter.RequestTooLargeException;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.RecordingMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;

class CheckMeterTest {

  private final RecordingMetrics metrics = new RecordingMetrics();
  private final CheckMeter meter = new CheckMeter(metrics);

  @Test
  void answered_underOverAndErrorItems_eachResultCounted() {
    meter.started();
    meter.answered(
        List.of(
            RateLimitResponse.of(Status.UNDER_LIMIT, 1, 0, 0),
            RateLimitResponse.of(Status.OVER_LIMIT, 1, 0, 0),
            RateLimitResponse.error("bad")));

    assertThat(metrics.events())
        .containsExactly("checked under_limit", "checked over_limit", "checked error");
  }

  @Test
  void failed_tooManyItemsWrapped_refusalCounted() {
    meter.started();
    meter.failed(new CompletionException(new RequestTooLargeException("too large")));

    assertThat(metrics.events()).containsExactly("refused too_many_items");
  }

  @Test
  void failed_otherFailure_nothingCounted() {
    meter.started();
    meter.failed(new IllegalStateException("peer down"));

    assertThat(metrics.events()).isEmpty();
  }

  @Test
  void inFlightGauge_countsStartedCallsUntilAnsweredOrFailed() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    CheckMeter metered = new CheckMeter(new MicrometerMetrics(registry));

    metered.started();
    metered.started();
    double during = registry.get(MicrometerMetrics.CHECKS_IN_FLIGHT).gauge().value();
    metered.answered(List.of(RateLimitResponse.of(Status.UNDER_LIMIT, 1, 0, 0)));
    metered.failed(new IllegalStateException("x"));

    assertThat(during).isEqualTo(2);
    assertThat(registry.get(MicrometerMetrics.CHECKS_IN_FLIGHT).gauge().value()).isZero();
    assertThat(registry.get(MicrometerMetrics.CHECKS).tag("result", "under_limit").counter().count())
        .isEqualTo(1);
  }
}
