package dev.weir.core.limiter;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Algorithm;
import dev.weir.core.model.Status;
import dev.weir.core.store.ClockBucketStore;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;

class LocalLimiterTest {

  private final FakeClock clock = new FakeClock();
  private final InMemoryBucketStore store = new InMemoryBucketStore(clock);
  private final LocalLimiter limiter =
      new LocalLimiter(new RateLimitEngine(ZoneOffset.UTC), store, clock);

  private static RateLimitRequest.Builder request() {
    return RateLimitRequest.builder("requests_per_sec", "account:1").limit(10).duration(1000);
  }

  @Test
  void stamp_createdAtUnset_clockWallTime() {
    assertThat(limiter.stamp(request().build()).createdAt()).isEqualTo(clock.wallMillis());
  }

  @Test
  void stamp_createdAtSet_unchanged() {
    assertThat(limiter.stamp(request().createdAt(42).build()).createdAt()).isEqualTo(42);
  }

  @Test
  void apply_createdAtUnset_windowStartsAtNodeClock() {
    RateLimitResponse response = limiter.decide(request().build());

    assertThat(response.status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(response.remaining()).isEqualTo(9);
    assertThat(response.resetTime()).isEqualTo(clock.wallMillis() + 1000);
  }

  @Test
  void apply_createdAtSet_windowStartsAtCreatedAt() {
    long createdAt = clock.wallMillis() - 300;

    RateLimitResponse response = limiter.decide(request().createdAt(createdAt).build());

    assertThat(response.resetTime()).isEqualTo(createdAt + 1000);
  }

  @Test
  void apply_firstHit_bucketStoredUnderHashKey() {
    limiter.decide(request().build());

    assertThat(store.get("requests_per_sec_account:1")).isPresent();
  }

  @Test
  void apply_repeatedHits_countDownThenOverLimit() {
    RateLimitRequest twoPerSecond = request().limit(2).build();

    assertThat(limiter.decide(twoPerSecond).status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(limiter.decide(twoPerSecond).status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(limiter.decide(twoPerSecond).status()).isEqualTo(Status.OVER_LIMIT);
  }

  @Test
  void apply_pastResetTime_newBucket() {
    RateLimitRequest onePerSecond = request().limit(1).build();
    long resetTime = limiter.decide(onePerSecond).resetTime();
    assertThat(limiter.decide(onePerSecond).status()).isEqualTo(Status.OVER_LIMIT);

    clock.advanceMillis(resetTime - clock.wallMillis() + 1);

    assertThat(limiter.decide(onePerSecond).status()).isEqualTo(Status.UNDER_LIMIT);
  }

  @Test
  void decide_fixedWindowStampedBeforeTheOwnersClockCrossedItsEnd_countsTheWindowsHits() {
    long end = clock.wallMillis() / 1000 * 1000;
    LocalLimiter owner =
        new LocalLimiter(
            new RateLimitEngine(ZoneOffset.UTC), new ClockBucketStore(clock, 100), clock);
    RateLimitRequest late =
        request().algorithm(Algorithm.FIXED_WINDOW).limit(1).createdAt(end - 1).build();

    assertThat(owner.decide(late).status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(owner.decide(late).status()).isEqualTo(Status.OVER_LIMIT);
  }

  @Test
  void decide_tokenBucketStampedBeforeTheOwnersClockPassedItsReset_countsTheBucketsHits() {
    LocalLimiter owner =
        new LocalLimiter(
            new RateLimitEngine(ZoneOffset.UTC), new ClockBucketStore(clock, 100), clock);
    RateLimitRequest onePerSecond = request().limit(1).createdAt(clock.wallMillis()).build();
    assertThat(owner.decide(onePerSecond).status()).isEqualTo(Status.UNDER_LIMIT);

    clock.advanceMillis(1500);

    RateLimitRequest late = request().limit(1).createdAt(clock.wallMillis() - 600).build();
    assertThat(owner.decide(late).status()).isEqualTo(Status.OVER_LIMIT);
  }
}
