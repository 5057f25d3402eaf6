package dev.weir.core.quota;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.Algorithm;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.InMemoryBucketStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class QuotaOwnerTest {

  private static final long INTERVAL = 5000;
  // 2026-01-01T00:00:00Z, a minute boundary.
  private final FakeClock clock = new FakeClock();
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final InMemoryBucketStore store = new InMemoryBucketStore(clock);
  private final List<QuotaPush> pushed = new ArrayList<>();
  private final QuotaOwner owner = new QuotaOwner(store, clock, scheduler, pushed::addAll);

  private static RateLimitRequest rule(Algorithm algorithm, long limit, long duration) {
    return RateLimitRequest.builder("rlqs/r", "k=v")
        .limit(limit)
        .duration(duration)
        .algorithm(algorithm)
        .build();
  }

  private QuotaShare report(RateLimitRequest rule, String client, long allowed, long elapsed) {
    return owner
        .report(List.of(new QuotaUsage(rule, client, allowed, 0, elapsed, INTERVAL, false)))
        .get(0);
  }

  private long remaining(RateLimitRequest rule) {
    return ((dev.weir.core.engine.FixedWindowState) store.get(rule.hashKey()).orElseThrow()).limit()
        - ((dev.weir.core.engine.FixedWindowState) store.get(rule.hashKey()).orElseThrow()).count();
  }

  @Test
  void newBucketsBeyondTheMostLedgers_areDeniedWithoutALedger_untilLedgersAreForgotten() {
    QuotaOwner bounded = new QuotaOwner(store, clock, scheduler, pushed::addAll, 2_000);
    List<QuotaShare> last = List.of();

    for (int report = 0; report < 50; report++) {
      List<QuotaUsage> usages = new ArrayList<>();
      for (int i = 0; i < 1_000; i++) {
        RateLimitRequest rule =
            RateLimitRequest.builder("rlqs/r", "user=" + (report * 1_000 + i))
                .limit(60)
                .duration(60_000)
                .algorithm(Algorithm.FIXED_WINDOW)
                .build();
        usages.add(new QuotaUsage(rule, "n/a", 1, 0, 0, INTERVAL, false));
      }
      last = bounded.report(usages);
      assertThat(bounded.buckets()).as("after report %d", report).isLessThanOrEqualTo(2_000);
    }

    assertThat(last)
        .allSatisfy(
            share -> {
              assertThat(share.isError()).isFalse();
              assertThat(share.milliRate()).as("denied").isZero();
            });
    clock.advanceMillis(QuotaOwner.SWEEP_INTERVAL.toMillis());
    QuotaShare later =
        bounded
            .report(
                List.of(
                    new QuotaUsage(
                        rule(Algorithm.FIXED_WINDOW, 60, 60_000), "n/a", 1, 0, 0, INTERVAL, false)))
            .get(0);
    assertThat(later.milliRate()).as("the expired ledgers were forgotten").isPositive();
  }

  @Test
  void report_countsTheAllowedRequestsInTheBucketsStore() {
    RateLimitRequest rule = rule(Algorithm.FIXED_WINDOW, 6000, 60_000);
    clock.advanceMillis(10_000);

    report(rule, "n/a", 40, 0);
    clock.advanceMillis(5000);
    report(rule, "n/a", 500, 5000);

    assertThat(remaining(rule)).isEqualTo(6000 - 540);
  }

  @Test
  void report_firstProxy_getsTheRemainingWindowPacedOverTheTimeLeft() {
    RateLimitRequest rule = rule(Algorithm.FIXED_WINDOW, 6000, 60_000);
    clock.advanceMillis(10_000);

    QuotaShare share = report(rule, "n/a", 0, 0);

    assertThat(share.isError()).isFalse();
    assertThat(share.ratePerSecond()).isCloseTo(120, org.assertj.core.api.Assertions.within(0.01));
    assertThat(share.burst()).isEqualTo(600);
  }

  @Test
  void report_straddlingTheWindowStart_countsOnlyTheShareInTheNewWindow() {
    RateLimitRequest rule = rule(Algorithm.FIXED_WINDOW, 6000, 60_000);
    clock.advanceMillis(61_000);

    report(rule, "n/a", 500, 5000);

    assertThat(remaining(rule)).isEqualTo(6000 - 100);
  }

  @Test
  void spentWindow_deniesUntilItEndsThenPushesNewShares() {
    RateLimitRequest rule = rule(Algorithm.FIXED_WINDOW, 100, 60_000);
    clock.advanceMillis(10_000);
    report(rule, "n/a", 1, 0);
    report(rule, "n/b", 1, 0);
    clock.advanceMillis(5000);

    QuotaShare spent = report(rule, "n/a", 200, 5000);

    assertThat(spent.milliRate()).isZero();
    assertThat(spent.spentUntil()).isEqualTo(clock.wallMillis() + 45_000);
    assertThat(pushed).extracting(QuotaPush::client).contains("n/b");
    assertThat(pushed.get(pushed.size() - 1).share().milliRate()).isZero();
    pushed.clear();

    for (int i = 0; i < 8; i++) {
      scheduler.advance(Duration.ofSeconds(5));
      assertThat(report(rule, "n/a", 0, 5000).milliRate()).isZero();
      assertThat(report(rule, "n/b", 0, 5000).milliRate()).isZero();
    }
    assertThat(pushed).isEmpty();
    scheduler.advance(Duration.ofSeconds(5));

    assertThat(pushed).extracting(QuotaPush::client).containsExactlyInAnyOrder("n/a", "n/b");
    assertThat(pushed).allSatisfy(p -> assertThat(p.share().milliRate()).isPositive());
  }

  @Test
  void release_ofTheLastProxy_dropsTheBucketsRecord() {
    RateLimitRequest rule = rule(Algorithm.TOKEN_BUCKET, 100, 60_000);
    report(rule, "n/a", 1, 0);
    assertThat(owner.buckets()).isEqualTo(1);

    owner.report(List.of(QuotaUsage.release(rule, "n/a", INTERVAL)));

    assertThat(owner.buckets()).isZero();
  }

  @Test
  void release_ofOneProxy_pushesTheOthersALargerShare() {
    RateLimitRequest rule = rule(Algorithm.FIXED_WINDOW, 6000, 60_000);
    clock.advanceMillis(10_000);
    report(rule, "n/a", 1, 0);
    QuotaShare b = report(rule, "n/b", 1, 0);
    pushed.clear();

    owner.report(List.of(QuotaUsage.release(rule, "n/b", INTERVAL)));

    assertThat(pushed)
        .singleElement()
        .satisfies(
            p -> {
              assertThat(p.client()).isEqualTo("n/a");
              assertThat(p.share().milliRate()).isGreaterThan(b.milliRate());
            });
  }

  @Test
  void report_invalidRule_isAnsweredWithTheEnginesError() {
    QuotaShare share = report(rule(Algorithm.FIXED_WINDOW, 10, -1), "n/a", 1, 0);

    assertThat(share.isError()).isTrue();
    assertThat(share.error()).contains("duration");
  }

  @Test
  void leakyBucket_sharesWhatLeaksOverTheInterval() {
    RateLimitRequest rule = rule(Algorithm.LEAKY_BUCKET, 60, 60_000);
    report(rule, "n/a", 60, 0);
    clock.advanceMillis(5000);

    QuotaShare share = report(rule, "n/a", 0, 5000);

    assertThat(share.ratePerSecond()).isGreaterThan(0).isLessThanOrEqualTo(2);
  }

  /** Returns a leaky-bucket rule of 600 a minute with a burst of 10. */
  private static RateLimitRequest leakyBucket600AMinuteBurst10() {
    return RateLimitRequest.builder("rlqs/r", "k=v")
        .limit(600)
        .duration(60_000)
        .algorithm(Algorithm.LEAKY_BUCKET)
        .burst(10)
        .build();
  }

  /**
   * Returns the share of proxy {@code n/a}, alone on {@code rule}'s bucket, after twelve report
   * intervals of 50 requests each.
   */
  private QuotaShare steadyLoneProxy(RateLimitRequest rule) {
    QuotaShare share = report(rule, "n/a", 0, 0);
    for (int i = 0; i < 12; i++) {
      clock.advanceMillis(INTERVAL);
      share = report(rule, "n/a", 50, INTERVAL);
    }
    return share;
  }

  @Test
  void leakyBucket_withABurstBelowWhatLeaksInAnInterval_stillSharesTheLimitsPace() {
    RateLimitRequest rule = leakyBucket600AMinuteBurst10();
    QuotaShare share = steadyLoneProxy(rule);

    assertThat(share.ratePerSecond())
        .as("600 a minute leak back at 10/s whatever the burst; the only proxy asks 12.5/s")
        .isCloseTo(10, org.assertj.core.api.Assertions.within(0.5));
  }

  @Test
  void leakyBucket_sharesBurst_isCappedAtTheRulesBurst_splitAcrossTheLiveProxies() {
    RateLimitRequest rule = leakyBucket600AMinuteBurst10();
    QuotaShare share = steadyLoneProxy(rule);

    assertThat(share.burst())
        .as("Envoy starts a token bucket full: the lone proxy may hold no more than burst 10")
        .isBetween(1L, 10L);

    QuotaShare other = report(rule, "n/b", 50, INTERVAL);
    share = report(rule, "n/a", 50, INTERVAL);

    assertThat(share.burst() + other.burst())
        .as("two proxies' bursts together stay within the rule's burst")
        .isLessThanOrEqualTo(10);
    assertThat(other.burst()).isPositive();
  }
}
