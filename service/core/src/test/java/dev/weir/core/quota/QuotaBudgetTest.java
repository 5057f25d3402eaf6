package dev.weir.core.quota;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.weir.core.model.Algorithm;
import org.junit.jupiter.api.Test;

class QuotaBudgetTest {

  private static final long NOW = 1_000_000;
  private static final long MINUTE = 60_000;

  private static QuotaBudget fixed(
      long remaining, long resetTime, double unreported, double bursts) {
    return new QuotaBudget(
        Algorithm.FIXED_WINDOW,
        6000,
        MINUTE,
        remaining,
        resetTime,
        0,
        NOW,
        5000,
        unreported,
        bursts);
  }

  @Test
  void fixedWindow_spreadsWhatRemainsOverTheTimeLeft() {
    assertThat(fixed(600, NOW + 30_000, 0, 0).fleetRate()).isCloseTo(20, within(1e-9));
  }

  @Test
  void fixedWindow_leavesOutUnreportedRequestsAndBursts() {
    assertThat(fixed(600, NOW + 30_000, 100, 50).fleetRate()).isCloseTo(15, within(1e-9));
  }

  @Test
  void fixedWindow_inItsLastInterval_neverExceedsTheLimitsPace() {
    assertThat(fixed(5000, NOW + 2000, 0, 0).fleetRate()).isCloseTo(100, within(1e-9));
  }

  @Test
  void fixedWindow_moreUnreportedThanRemaining_isZeroAndNotSpent() {
    QuotaBudget b = fixed(10, NOW + 30_000, 20, 0);

    assertThat(b.fleetRate()).isZero();
    assertThat(b.spent()).isFalse();
  }

  @Test
  void fixedWindow_nothingRemaining_isSpent() {
    assertThat(fixed(0, NOW + 30_000, 0, 0).spent()).isTrue();
  }

  @Test
  void windowNoLongerThanTheInterval_isTheLimitsPace() {
    QuotaBudget b =
        new QuotaBudget(Algorithm.FIXED_WINDOW, 100, 1000, 0, NOW + 10, 0, NOW, 5000, 500, 50);

    assertThat(b.fleetRate()).isCloseTo(100, within(1e-9));
    assertThat(b.spent()).isFalse();
  }

  @Test
  void leakyBucket_isWhatItAdmitsOverTheIntervalDividedByIt() {
    QuotaBudget b =
        new QuotaBudget(Algorithm.LEAKY_BUCKET, 6000, MINUTE, 100, 0, 600, NOW, 5000, 100, 0);

    assertThat(b.fleetRate()).isCloseTo(100, within(1e-9));
    assertThat(b.spent()).isFalse();
  }

  @Test
  void leakyBucket_withABurstBelowWhatLeaksInTheInterval_isWhatItAdmitsNowAndWhatLeaks() {
    QuotaBudget b =
        new QuotaBudget(Algorithm.LEAKY_BUCKET, 600, MINUTE, 10, 0, 10, NOW, 5000, 0, 0);

    assertThat(b.fleetRate())
        .as("10 now and 50 leaked over 5 s, not the burst of 10 over 5 s")
        .isCloseTo(12, within(1e-9));
  }
}
