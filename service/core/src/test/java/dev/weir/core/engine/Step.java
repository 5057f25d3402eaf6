package dev.weir.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import java.util.List;

/**
 * One row of an engine table: at {@code Requests.NOW + offset}, {@code request} is answered with
 * {@code status}, {@code remaining} and {@code resetTime} (an epoch millisecond; {@link #at} takes it
 * relative to {@code NOW}).
 */
record Step(long offset, RateLimitRequest request, Status status, long remaining, long resetTime) {

  static Step at(long offset, RateLimitRequest request, Status status, long remaining, long reset) {
    return new Step(offset, request, status, remaining, Requests.NOW + reset);
  }

  static Step atAbsolute(
      long offset, RateLimitRequest request, Status status, long remaining, long resetTime) {
    return new Step(offset, request, status, remaining, resetTime);
  }

  /** Runs {@code steps} against one fresh bucket, asserting every answer. */
  static void run(Scenario scenario, List<Step> steps) {
    for (int i = 0; i < steps.size(); i++) {
      Step s = steps.get(i);
      RateLimitResponse r = scenario.send(s.request(), Requests.NOW + s.offset());
      assertThat(r)
          .as("step %d at +%d ms: %s", i, s.offset(), s.request())
          .isEqualTo(
              RateLimitResponse.of(s.status(), s.request().limit(), s.remaining(), s.resetTime()));
    }
  }
}
