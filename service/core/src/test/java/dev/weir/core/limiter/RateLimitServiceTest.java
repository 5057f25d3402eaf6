package dev.weir.core.limiter;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class RateLimitServiceTest {

  @Test
  void tooManyItems_aboveMaxBatchSizeOnly() {
    assertThat(RateLimitService.tooManyItems(0)).isFalse();
    assertThat(RateLimitService.tooManyItems(1000)).isFalse();
    assertThat(RateLimitService.tooManyItems(1001)).isTrue();
  }

  @Test
  void overBatchSize_wordedAsGubernator() {
    assertThat(RequestTooLargeException.overBatchSize())
        .hasMessage("Requests.RateLimits list too large; max size is '1000'")
        .hasMessage(RequestTooLargeException.OVER_BATCH_SIZE_MESSAGE);
  }
}
