package dev.weir.core.quota;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.weir.core.model.Algorithm;
import dev.weir.core.model.RateLimitRequest;
import java.util.List;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;

class BucketLedgerTest {

  private static final long INTERVAL = 5000;
  private static final RateLimitRequest RULE =
      RateLimitRequest.builder("rlqs/r", "k")
          .limit(6000)
          .duration(60_000)
          .algorithm(Algorithm.FIXED_WINDOW)
          .build();

  private final BucketLedger ledger = new BucketLedger(RULE.hashKey(), 1000, 2);

  private BucketLedger.Client report(String client, long count, long elapsed, long now) {
    return ledger.record(new QuotaUsage(RULE, client, count, 0, elapsed, INTERVAL, false), now);
  }

  @Test
  void firstProxy_unknownDemand_getsTheWholeRate() {
    BucketLedger.Client a = report("n/a", 1, 0, 10_000);

    List<QuotaPush> pushes = ledger.allocate(a, 100, 0);

    assertThat(pushes).isEmpty();
    QuotaShare share = ledger.share(a, 0);
    assertThat(share.milliRate()).isEqualTo(100_000);
    assertThat(share.burst()).isEqualTo(500);
  }

  @Test
  void joiningProxy_othersHoldingEverything_areLoweredAndPushedToMakeRoom() {
    BucketLedger.Client a = report("n/a", 250, 5000, 10_000);
    ledger.allocate(a, 100, 0);
    BucketLedger.Client b = report("m/b", 1, 0, 11_000);

    List<QuotaPush> pushes = ledger.allocate(b, 100, 0);

    assertThat(pushes).extracting(QuotaPush::client).containsExactly("n/a");
    long rateA = pushes.get(0).share().milliRate();
    long rateB = ledger.share(b, 0).milliRate();
    assertThat(rateA + rateB).isLessThanOrEqualTo(100_000);
    assertThat(rateB).isGreaterThanOrEqualTo(40_000);
  }

  @Test
  void reporterShortBySmallAmount_takesWhatIsLeftWithoutPushes() {
    BucketLedger.Client a = report("n/a", 200, 5000, 10_000);
    BucketLedger.Client b = report("n/b", 200, 5000, 10_000);
    ledger.allocate(a, 100, 0);
    ledger.allocate(b, 100, 0);
    BucketLedger.Client a2 = report("n/a", 210, 5000, 15_000);

    List<QuotaPush> pushes = ledger.allocate(a2, 100, 0);

    assertThat(pushes).isEmpty();
    assertThat(ledger.share(a2, 0).milliRate() + ledger.share(b, 0).milliRate())
        .isLessThanOrEqualTo(100_000);
  }

  @Test
  void quietProxy_oneQuieterInterval_keepsAShareAboveItsUsualRate() {
    ledger.allocate(report("n/h", 1000, 5000, 10_000), 100, 0);
    ledger.allocate(report("n/q", 15, 5000, 10_000), 100, 0);
    ledger.allocate(report("n/h", 1000, 5000, 15_000), 100, 0);
    ledger.allocate(report("n/q", 15, 5000, 15_000), 100, 0);
    BucketLedger.Client quiet = report("n/q", 10, 5000, 20_000);

    ledger.allocate(quiet, 100, 0);

    assertThat(quiet.demand).isCloseTo(2.75, within(1e-9));
    assertThat(ledger.share(quiet, 0).milliRate()).isGreaterThan(3000);
  }

  @Test
  void growingProxy_isGivenItsLatestDemandAtOnce() {
    report("n/a", 15, 5000, 10_000);

    BucketLedger.Client a = report("n/a", 100, 5000, 15_000);

    assertThat(a.demand).isEqualTo(20);
  }

  @Test
  void spentWindow_everyProxyIsLoweredToZero() {
    BucketLedger.Client a = report("n/a", 100, 5000, 10_000);
    BucketLedger.Client b = report("n/b", 100, 5000, 10_000);
    ledger.allocate(a, 100, 0);
    ledger.allocate(b, 100, 0);

    List<QuotaPush> pushes = ledger.allocate(report("n/a", 100, 5000, 15_000), 0, 60_000);

    assertThat(pushes)
        .singleElement()
        .satisfies(
            p -> {
              assertThat(p.client()).isEqualTo("n/b");
              assertThat(p.share().milliRate()).isZero();
              assertThat(p.share().spentUntil()).isEqualTo(60_000);
            });
    assertThat(ledger.share(a, 60_000).milliRate()).isZero();
  }

  @Test
  void release_thenRebalance_raisesTheOthers() {
    BucketLedger.Client a = report("n/a", 500, 5000, 10_000);
    BucketLedger.Client b = report("n/b", 500, 5000, 10_000);
    ledger.allocate(a, 100, 0);
    ledger.allocate(b, 100, 0);
    long before = ledger.share(a, 0).milliRate();

    ledger.release("n/b");
    List<QuotaPush> pushes = ledger.rebalance(100, 0);

    assertThat(pushes).singleElement().satisfies(p -> assertThat(p.client()).isEqualTo("n/a"));
    assertThat(pushes.get(0).share().milliRate()).isGreaterThan(before).isEqualTo(100_000);
  }

  @Test
  void expire_forgetsProxiesTwoIntervalsAfterTheirLastReport() {
    report("n/a", 1, 5000, 10_000);
    report("n/b", 1, 5000, 14_000);

    assertThat(ledger.expire(20_000)).isTrue();

    assertThat(ledger.clients()).extracting(c -> c.id).containsExactly("n/b");
  }

  @Test
  void unreported_isEachOtherProxysRateCappedByItsWantOverTheTimeSinceItsReport() {
    BucketLedger.Client a = report("n/a", 50, 5000, 10_000);
    ledger.allocate(a, 100, 0);
    BucketLedger.Client b = report("n/b", 1, 0, 12_000);

    assertThat(ledger.unreported(b, 12_000)).isEqualTo(12.5 * 2);
  }

  @Test
  void bursts_countOnlyTheProxiesAskingForLessThanTheirRateOrNotKnownYet() {
    BucketLedger.Client busy = report("n/busy", 1000, 5000, 10_000);
    ledger.allocate(busy, 40, 0);
    BucketLedger.Client quiet = report("n/quiet", 10, 5000, 10_000);
    ledger.allocate(quiet, 40, 0);
    BucketLedger.Client fresh = report("n/fresh", 1, 0, 10_000);
    ledger.allocate(fresh, 40, 0);

    assertThat(busy.demand).isGreaterThan(busy.milliRate / 1000.0);
    assertThat(quiet.demand).isLessThan(quiet.milliRate / 1000.0);
    assertThat(ledger.bursts()).isEqualTo(quiet.burst + fresh.burst);
  }

  @Test
  void shares_areNumberedInOrder() {
    BucketLedger.Client a = report("n/a", 1, 0, 10_000);
    QuotaShare first = ledger.share(a, 0);
    QuotaShare second = ledger.share(a, 0);

    assertThat(second.isNewerThan(first)).isTrue();
    assertThat(first.epoch()).isEqualTo(1000);
  }

  @Property(tries = 200)
  void shares_neverAddUpToMoreThanTheRateTheyWereSetFor(
      @ForAll @LongRange(min = 1, max = 1_000_000) long seed,
      @ForAll @IntRange(min = 1, max = 12) int proxies) {
    Random random = new Random(seed);
    BucketLedger l = new BucketLedger("k", 0, 2);
    long now = 10_000;
    for (int step = 0; step < 60; step++) {
      now += random.nextInt(2000);
      String client = "n/" + random.nextInt(proxies);
      double rate = random.nextInt(5) == 0 ? 0 : random.nextDouble() * 500;
      if (random.nextInt(10) == 0) {
        l.release(client);
        l.rebalance(rate, 0);
      } else {
        long elapsed = random.nextBoolean() ? 0 : 1 + random.nextInt(6000);
        BucketLedger.Client c =
            l.record(
                new QuotaUsage(
                    RULE,
                    client,
                    random.nextInt(1000),
                    random.nextInt(100),
                    elapsed,
                    INTERVAL,
                    false),
                now);
        l.allocate(c, rate, 0);
      }
      l.expire(now);
      long sum = l.clients().stream().mapToLong(c -> c.milliRate).sum();
      assertThat(sum)
          .as("step %d, rate %s", step, rate)
          .isLessThanOrEqualTo((long) Math.floor(rate * 1000));
    }
  }
}
