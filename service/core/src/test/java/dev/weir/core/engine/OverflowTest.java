package dev.weir.core.engine;

import static dev.weir.core.engine.Requests.NOW;
import static java.lang.Long.MAX_VALUE;
import static java.lang.Long.MIN_VALUE;
import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import org.junit.jupiter.api.Test;

class OverflowTest {

  @Test
  void saturatingMath_clampsInsteadOfWrapping() {
    assertThat(SaturatingMath.add(MAX_VALUE, 1)).isEqualTo(MAX_VALUE);
    assertThat(SaturatingMath.add(MIN_VALUE, -1)).isEqualTo(MIN_VALUE);
    assertThat(SaturatingMath.add(MAX_VALUE, MIN_VALUE)).isEqualTo(-1);
    assertThat(SaturatingMath.sub(MAX_VALUE, -1)).isEqualTo(MAX_VALUE);
    assertThat(SaturatingMath.sub(0, MIN_VALUE)).isEqualTo(MAX_VALUE);
    assertThat(SaturatingMath.sub(MIN_VALUE, 1)).isEqualTo(MIN_VALUE);
    assertThat(SaturatingMath.mul(MAX_VALUE, 2)).isEqualTo(MAX_VALUE);
    assertThat(SaturatingMath.mul(MAX_VALUE, -2)).isEqualTo(MIN_VALUE);
    assertThat(SaturatingMath.mul(-3, -4)).isEqualTo(12);
    assertThat(SaturatingMath.mulDivFloor(MAX_VALUE, MAX_VALUE, MAX_VALUE)).isEqualTo(MAX_VALUE);
    assertThat(SaturatingMath.mulDivFloor(MAX_VALUE, 3, 4)).isEqualTo(6917529027641081855L);
    assertThat(SaturatingMath.mulDivCeil(MAX_VALUE, 3, 4)).isEqualTo(6917529027641081856L);
    assertThat(SaturatingMath.mulDivCeil(7, 1, 2)).isEqualTo(4);
    assertThat(SaturatingMath.mulDivFloor(MAX_VALUE, MAX_VALUE, 1)).isEqualTo(MAX_VALUE);
    assertThat(SaturatingMath.gcd(1000, 15)).isEqualTo(5);
    assertThat(SaturatingMath.productAtLeast(MAX_VALUE, 2, MAX_VALUE)).isTrue();
    assertThat(SaturatingMath.productAtLeast(3, 4, 12)).isTrue();
    assertThat(SaturatingMath.productAtLeast(3, 4, 13)).isFalse();
  }

  @Test
  void tokenBucket_limitAndHitsAtMaxValue_admitsAndEmpties() {
    Scenario s = new Scenario();
    assertThat(s.send(Requests.token(MAX_VALUE, 1000, MAX_VALUE), NOW))
        .isEqualTo(RateLimitResponse.of(Status.UNDER_LIMIT, MAX_VALUE, 0, NOW + 1000));
    assertThat(s.send(Requests.token(MAX_VALUE, 1000, MAX_VALUE), NOW + 1).status())
        .isEqualTo(Status.OVER_LIMIT);
  }

  @Test
  void tokenBucket_mostNegativeHits_saturateRemaining() {
    Scenario s = new Scenario();
    assertThat(s.send(Requests.token(10, 1000, MIN_VALUE + 1), NOW).remaining())
        .isEqualTo(MAX_VALUE);
    assertThat(s.send(Requests.token(10, 1000, MIN_VALUE + 1), NOW).remaining())
        .isEqualTo(MAX_VALUE);
    assertThat(s.send(Requests.token(MAX_VALUE, 1000, 0), NOW).remaining()).isEqualTo(MAX_VALUE);
  }

  @Test
  void tokenBucket_maxDuration_saturatesResetAndExpiry() {
    Scenario s = new Scenario();
    assertThat(s.send(Requests.token(10, MAX_VALUE, 1), NOW).resetTime()).isEqualTo(MAX_VALUE);
    assertThat(s.state().expireAt()).isEqualTo(MAX_VALUE);
    assertThat(s.send(Requests.token(10, MAX_VALUE, 1), MAX_VALUE - 1).remaining()).isEqualTo(8);
    assertThat(s.send(Requests.token(10, MAX_VALUE - 5, 1), NOW + 1).resetTime())
        .isEqualTo(NOW + MAX_VALUE - 5 < 0 ? MAX_VALUE : NOW + MAX_VALUE - 5);
  }

  @Test
  void leakyBucket_extremeConfiguration_staysInRange() {
    Scenario s = new Scenario();
    RateLimitResponse first = s.send(Requests.leaky(MAX_VALUE, MAX_VALUE, MAX_VALUE), NOW);
    assertThat(first)
        .isEqualTo(
            RateLimitResponse.of(
                Status.UNDER_LIMIT,
                MAX_VALUE,
                0,
                NOW + MAX_VALUE < 0 ? MAX_VALUE : NOW + MAX_VALUE));
    RateLimitResponse later = s.send(Requests.leaky(MAX_VALUE, MAX_VALUE, 0), MAX_VALUE - 1);
    assertThat(later.remaining()).isBetween(0L, MAX_VALUE);
    assertThat(later.resetTime()).isGreaterThanOrEqualTo(MAX_VALUE - 1);
    Scenario fast = new Scenario();
    fast.send(Requests.leaky(MAX_VALUE, 1, MAX_VALUE), NOW);
    assertThat(fast.send(Requests.leaky(MAX_VALUE, 1, 0), NOW + 1_000_000).remaining())
        .isEqualTo(MAX_VALUE);
    assertThat(fast.send(Requests.leaky(MAX_VALUE, 1, MIN_VALUE + 1), NOW + 1_000_001).remaining())
        .isEqualTo(MAX_VALUE);
  }

  @Test
  void leakyBucket_hugeLeakAfterLongIdle_capsAtBurst() {
    Scenario s = new Scenario();
    s.send(Requests.leaky(MAX_VALUE / 2, 3, 5, MAX_VALUE / 2, 0), 0);
    RateLimitResponse r = s.send(Requests.leaky(MAX_VALUE / 2, 3, 5, 0, 0), 2);
    assertThat(r.remaining()).isEqualTo(5);
  }

  @Test
  void fixedWindow_countSaturates_andStaysOverLimit() {
    Scenario s = new Scenario();
    assertThat(s.send(Requests.fixed(MAX_VALUE, 1000, MAX_VALUE), NOW).status())
        .isEqualTo(Status.UNDER_LIMIT);
    assertThat(s.send(Requests.fixed(MAX_VALUE, 1000, MAX_VALUE), NOW).status())
        .isEqualTo(Status.OVER_LIMIT);
    assertThat(s.send(Requests.fixed(MAX_VALUE, 1000, 1), NOW).status())
        .isEqualTo(Status.OVER_LIMIT);
    assertThat(s.send(Requests.fixed(10, 1000, MIN_VALUE + 1), NOW + 1000).remaining())
        .isEqualTo(MAX_VALUE);
    assertThat(s.send(Requests.fixed(10, MAX_VALUE, 1), NOW).resetTime()).isEqualTo(MAX_VALUE);
  }

  @Test
  void slidingWindow_maxCountsAndDuration_neverOverflow() {
    Scenario s = new Scenario();
    assertThat(s.send(Requests.sliding(MAX_VALUE, 1000, MAX_VALUE), NOW).status())
        .isEqualTo(Status.UNDER_LIMIT);
    RateLimitResponse r = s.send(Requests.sliding(MAX_VALUE, 1000, 1), NOW + 1000);
    assertThat(r).isEqualTo(RateLimitResponse.of(Status.OVER_LIMIT, MAX_VALUE, 0, NOW + 2000));
    assertThat(s.send(Requests.sliding(MAX_VALUE, 1000, 0), NOW + 1999).remaining())
        .isEqualTo(MAX_VALUE - SaturatingMath.mulDivCeil(MAX_VALUE, 1, 1000));
    Scenario longest = new Scenario();
    assertThat(longest.send(Requests.sliding(10, MAX_VALUE, 10), NOW).resetTime())
        .isEqualTo(MAX_VALUE);
    assertThat(longest.send(Requests.sliding(10, MAX_VALUE, MIN_VALUE + 1), NOW).remaining())
        .isEqualTo(MAX_VALUE);
  }
}
