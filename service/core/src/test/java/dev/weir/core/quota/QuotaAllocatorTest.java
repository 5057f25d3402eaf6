package dev.weir.core.quota;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.Arrays;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

class QuotaAllocatorTest {

  @Test
  void want_unknownDemand_isAnEqualSplit() {
    assertThat(QuotaAllocator.want(Double.NaN, 40)).isEqualTo(40);
  }

  @Test
  void want_knownDemand_isDemandWithHeadroom() {
    assertThat(QuotaAllocator.want(20, 40)).isEqualTo(25);
  }

  @Test
  void want_quietProxy_isTheFloorOfAnEqualSplit() {
    assertThat(QuotaAllocator.want(0, 40)).isEqualTo(4);
  }

  @Test
  void smooth_firstReport_isWhatWasMeasured() {
    assertThat(QuotaAllocator.smooth(Double.NaN, 4)).isEqualTo(4);
  }

  @Test
  void smooth_laterReport_movesAQuarterOfTheWayTowardsIt() {
    assertThat(QuotaAllocator.smooth(4, 0)).isEqualTo(3);
    assertThat(QuotaAllocator.smooth(4, 8)).isEqualTo(5);
  }

  @Test
  void demand_quietInterval_isTheSmoothedDemand() {
    assertThat(QuotaAllocator.demand(3, 2)).isEqualTo(3);
  }

  @Test
  void demand_growth_isSeenAtOnce() {
    assertThat(QuotaAllocator.demand(3, 10)).isEqualTo(10);
  }

  @Test
  void demand_unknownBefore_isWhatWasMeasured() {
    assertThat(QuotaAllocator.demand(Double.NaN, 2)).isEqualTo(2);
  }

  @Test
  void split_askingLessThanTheRate_givesEachItsWantAndTheRestInProportion() {
    double[] shares = QuotaAllocator.split(100, new double[] {10, 30});

    assertThat(shares[0]).isCloseTo(25, within(1e-9));
    assertThat(shares[1]).isCloseTo(75, within(1e-9));
  }

  @Test
  void split_nobodyAsking_splitsEvenly() {
    assertThat(QuotaAllocator.split(90, new double[] {0, 0, 0})).containsExactly(30, 30, 30);
  }

  @Test
  void split_askingMoreThanTheRate_givesSmallWantsInFullAndSharesTheRestEvenly() {
    double[] shares = QuotaAllocator.split(30, new double[] {100, 1, 10});

    assertThat(shares[1]).isEqualTo(1);
    assertThat(shares[2]).isEqualTo(10);
    assertThat(shares[0]).isCloseTo(19, within(1e-9));
  }

  @Test
  void split_twoBusyProxiesUnequal_getTheSameLevel() {
    double[] shares = QuotaAllocator.split(90, new double[] {10, 50, 60});

    assertThat(shares).containsExactly(10, 40, 40);
  }

  @Test
  void split_zeroRate_givesNothing() {
    assertThat(QuotaAllocator.split(0, new double[] {5, 5})).containsExactly(0, 0);
  }

  @Property
  void split_alwaysAddsUpToTheRateAndNeverGivesLessThanAskedBelowAnEqualSplit(
      @ForAll @DoubleRange(min = 0.01, max = 1e6) double rate,
      @ForAll @Size(min = 1, max = 30) double[] rawWants) {
    double[] wants = Arrays.stream(rawWants).map(w -> Math.abs(w) % 1e6).toArray();

    double[] shares = QuotaAllocator.split(rate, wants);

    assertThat(Arrays.stream(shares).sum()).isCloseTo(rate, within(rate * 1e-9));
    for (int i = 0; i < wants.length; i++) {
      assertThat(shares[i]).isGreaterThanOrEqualTo(0);
      if (wants[i] <= rate / wants.length) {
        assertThat(shares[i]).isGreaterThanOrEqualTo(wants[i] - 1e-9 * rate);
      }
    }
  }

  @Test
  void burst_isFiveSecondsOfTheRateRoundedUpAtLeastOne() {
    assertThat(QuotaAllocator.burst(0)).isZero();
    assertThat(QuotaAllocator.burst(17)).isEqualTo(1);
    assertThat(QuotaAllocator.burst(12_500)).isEqualTo(63);
  }
}
