package dev.weir.envoy.rlqs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.quota.QuotaShare;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.BucketId;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class StreamCounterTest {

  private static final BucketId ID = BucketId.newBuilder().putBucket("name", "api").build();
  private static final Duration TTL = Duration.ofSeconds(10);
  private static final RateLimitRequest POLICY =
      RateLimitRequest.builder("rlqs:api", "k").limit(600).duration(60_000).build();

  private final StreamCounter counter = new StreamCounter(POLICY);

  private StreamBucket on(StreamCounter counter, String value) {
    StreamBucket bucket =
        new StreamBucket(
            BucketId.newBuilder().putBucket("path", value).build(),
            value,
            new BucketPlan.Limited(List.of(POLICY)),
            0,
            0);
    counter.add(bucket);
    bucket.counters(List.of(counter));
    return bucket;
  }

  @Test
  void ownerDoesNotAnswerAfterAShare_theLastShareIsStillAssigned() {
    StreamBucket bucket =
        new StreamBucket(ID, "api", new BucketPlan.Limited(List.of(POLICY)), 0, 0);
    counter.add(bucket);
    bucket.counters(List.of(counter));
    QuotaShare share = new QuotaShare(10_000, 10, 0, 1_000, 1, "");
    counter.accept(share, true, 0);

    boolean taken =
        counter.accept(
            QuotaShare.error("error while reporting quota usage to peer 'b': DEADLINE_EXCEEDED"),
            true,
            0);

    assertThat(taken).isFalse();
    assertThat(bucket.limitedAction(TTL)).contains(Assignments.share(ID, List.of(share), TTL));
  }

  @Test
  void ownerDoesNotAnswerTheFirstReport_noAssignmentYet() {
    StreamBucket bucket = on(counter, "a");

    counter.accept(QuotaShare.error("error while reporting quota usage to peer 'b'"), true, 0);

    assertThat(bucket.limitedAction(TTL)).isEmpty();
  }

  @Test
  void bucketsOfUnknownDemand_splitTheShareEvenly() {
    StreamBucket a = on(counter, "a");
    StreamBucket b = on(counter, "b");
    counter.accept(new QuotaShare(10_000, 50, 0, 1_000, 1, ""), true, 0);

    assertThat(counter.partOf(a).milliRate()).isEqualTo(5_000);
    assertThat(counter.partOf(b).milliRate()).isEqualTo(5_000);
    assertThat(counter.partOf(a).burst()).isEqualTo(25);
  }

  @Test
  void busyAndQuietBuckets_theBusyOneGetsMostAndTheQuietOneItsFloor_neverMoreThanTheShare() {
    StreamBucket busy = on(counter, "busy");
    StreamBucket quiet = on(counter, "quiet");
    busy.measure(100, 5_000, 5_000_000_000L);
    quiet.measure(0, 5_000, 5_000_000_000L);
    counter.accept(new QuotaShare(10_000, 50, 0, 1_000, 1, ""), true, 0);

    long busyPart = counter.partOf(busy).milliRate();
    long quietPart = counter.partOf(quiet).milliRate();

    assertThat(quietPart).as("a tenth of an equal split, so it can start").isEqualTo(500);
    assertThat(busyPart + quietPart).isLessThanOrEqualTo(10_000);
    assertThat(busyPart).isGreaterThanOrEqualTo(9_499);
  }

  @Test
  void spentShare_everyBucketGetsNothing() {
    StreamBucket a = on(counter, "a");
    StreamBucket b = on(counter, "b");
    counter.accept(new QuotaShare(0, 0, 1_000_060_000L, 1_000, 1, ""), true, 0);

    assertThat(Assignments.kindOf(a.limitedAction(TTL).orElseThrow()))
        .isEqualTo(Assignments.Kind.DENY_ALL);
    assertThat(Assignments.kindOf(b.limitedAction(TTL).orElseThrow()))
        .isEqualTo(Assignments.Kind.DENY_ALL);
  }

  private static long tokens(StreamBucket bucket) {
    var action = bucket.limitedAction(TTL).orElseThrow();
    var strategy = action.getQuotaAssignmentAction().getRateLimitStrategy();
    return strategy.hasTokenBucket() ? strategy.getTokenBucket().getTokensPerFill().getValue() : 0;
  }

  private static long maxTokens(StreamBucket bucket) {
    var strategy =
        bucket.limitedAction(TTL).orElseThrow().getQuotaAssignmentAction().getRateLimitStrategy();
    return strategy.hasTokenBucket() ? strategy.getTokenBucket().getMaxTokens() : 0;
  }

  private List<StreamBucket> equalDemand(int n) {
    List<StreamBucket> all = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      StreamBucket b = on(counter, "b" + i);
      b.measure(10, 5_000, 5_000_000_000L);
      all.add(b);
    }
    return all;
  }

  @Test
  void threeBucketsOfEqualDemand_onAShareOf2point4AMinuteAndBurst1_oneBucketHoldsBothTokens() {
    List<StreamBucket> all = equalDemand(3);
    counter.accept(new QuotaShare(40, 1, 0, 1_000, 1, ""), true, 0);

    long sum = 0;
    long denied = 0;
    long burst = 0;
    for (StreamBucket b : all) {
      sum += tokens(b);
      burst += maxTokens(b);
      if (Assignments.kindOf(b.limitedAction(TTL).orElseThrow()) == Assignments.Kind.DENY_ALL) {
        denied++;
        assertThat(tokens(b)).isZero();
      }
    }
    assertThat(sum).as("the floor of 2.4 tokens a minute").isEqualTo(2);
    assertThat(burst).as("no more than the share's burst").isLessThanOrEqualTo(1);
    assertThat(denied).isEqualTo(2);
  }

  @Test
  void twoBucketsOfEqualDemand_onAShareBelowOneRequestAMinute_oneBucketHoldsTheWholeShare() {
    List<StreamBucket> all = equalDemand(2);
    counter.accept(new QuotaShare(11, 1, 0, 1_000, 1, ""), true, 0);

    List<Assignments.Kind> kinds =
        all.stream().map(b -> Assignments.kindOf(b.limitedAction(TTL).orElseThrow())).toList();
    assertThat(kinds)
        .as("a day's share of 1000/86400 s, split between two buckets")
        .containsExactlyInAnyOrder(Assignments.Kind.TOKEN_BUCKET, Assignments.Kind.DENY_ALL);
    assertThat(all.stream().mapToLong(b -> counter.partOf(b).milliRate()).sum()).isEqualTo(11);
  }

  private static StreamBucket holderOf(List<StreamBucket> all) {
    List<StreamBucket> holders =
        all.stream()
            .filter(
                b ->
                    Assignments.kindOf(b.limitedAction(TTL).orElseThrow())
                        == Assignments.Kind.TOKEN_BUCKET)
            .toList();
    assertThat(holders).hasSize(1);
    return holders.get(0);
  }

  @Test
  void twoBucketsOfEqualDemand_onAShareBelowOneRequestAMinute_theSameBucketHoldsItEveryReport() {
    List<StreamBucket> all = equalDemand(2);
    List<StreamBucket> holders = new ArrayList<>();
    for (long seq = 1; seq <= 4; seq++) {
      counter.accept(new QuotaShare(11, 1, 0, 1_000, seq, ""), true, 0);
      holders.add(holderOf(all));
    }

    assertThat(holders)
        .as("a new holder starts a full token bucket, so moving it each report admits a burst each")
        .containsOnly(holders.get(0));
  }

  @Test
  void onAShareBelowOneRequestAMinute_theHolderStopsAsking_theTokenMovesToTheBusyBucket() {
    List<StreamBucket> all = List.of(on(counter, "a"), on(counter, "b"));
    counter.accept(new QuotaShare(11, 1, 0, 1_000, 1, ""), true, 0);
    StreamBucket first = holderOf(all);
    StreamBucket other = all.get(0) == first ? all.get(1) : all.get(0);

    first.measure(0, 5_000, 5_000_000_000L);
    other.measure(10, 5_000, 5_000_000_000L);
    counter.accept(new QuotaShare(11, 1, 0, 1_000, 2, ""), true, 0);

    assertThat(holderOf(all)).isSameAs(other);
  }

  @Test
  void onAShareBelowOneRequestAMinute_theHolderLeaves_theTokenMovesToABucketLeft() {
    List<StreamBucket> all = new ArrayList<>(equalDemand(2));
    counter.accept(new QuotaShare(11, 1, 0, 1_000, 1, ""), true, 0);
    StreamBucket first = holderOf(all);
    all.add(on(counter, "late"));

    counter.remove(first);
    all.remove(first);
    counter.accept(new QuotaShare(11, 1, 0, 1_000, 2, ""), true, 0);

    assertThat(holderOf(all)).isNotSameAs(first);
  }

  @Test
  void threeBucketsOfEqualDemand_onAShareOf2point4AMinuteWithBurst2_twoBucketsGetATokenEach() {
    List<StreamBucket> all = equalDemand(3);
    counter.accept(new QuotaShare(40, 2, 0, 1_000, 1, ""), true, 0);

    assertThat(all.stream().mapToLong(StreamCounterTest::tokens).sum()).isEqualTo(2);
    assertThat(all.stream().mapToLong(StreamCounterTest::maxTokens).sum()).isEqualTo(2);
  }

  @Test
  void fourHundredBucketsOfEqualDemand_onA600AMinuteShare_theirPartsAddUpTo600() {
    List<StreamBucket> all = equalDemand(400);
    counter.accept(new QuotaShare(10_000, 50, 0, 1_000, 1, ""), true, 0);

    assertThat(all.stream().mapToLong(StreamCounterTest::tokens).sum()).isEqualTo(600);
    assertThat(all.stream().mapToLong(StreamCounterTest::maxTokens).sum())
        .as("the parts hold no more than the share's burst")
        .isLessThanOrEqualTo(50);
  }

  @Test
  void bucketsOfEqualDemandBeyondTheTokens_takeTurnsAsSharesArrive() {
    List<StreamBucket> all = equalDemand(3);
    counter.accept(new QuotaShare(40, 2, 0, 1_000, 1, ""), true, 0);
    List<Long> first = all.stream().map(StreamCounterTest::tokens).toList();

    counter.accept(new QuotaShare(40, 2, 0, 1_000, 2, ""), true, 0);
    List<Long> second = all.stream().map(StreamCounterTest::tokens).toList();

    assertThat(second).isNotEqualTo(first);
  }

  @Test
  void twentyThousandBucketsOnOneCounter_everyBucketsAction_splitsTheShareOnce() {
    List<StreamBucket> all = equalDemand(20_000);
    counter.accept(new QuotaShare(10_000_000, 50_000, 0, 1_000, 1, ""), true, 0);

    long tokens =
        org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
            Duration.ofSeconds(20),
            () -> all.stream().mapToLong(StreamCounterTest::tokens).sum(),
            "each bucket's action re-splits the counter");

    assertThat(tokens).isEqualTo(600_000);
    assertThat(counter.splits).as("the parts are computed once per change").isEqualTo(1);
  }

  @Test
  void aBucketsDemandChanges_thePartsAreSplitAgain() {
    StreamBucket busy = on(counter, "busy");
    StreamBucket quiet = on(counter, "quiet");
    counter.accept(new QuotaShare(10_000, 50, 0, 1_000, 1, ""), true, 0);
    long before = counter.partOf(busy).milliRate();

    busy.measure(100, 5_000, 5_000_000_000L);
    quiet.measure(0, 5_000, 5_000_000_000L);

    assertThat(counter.partOf(busy).milliRate()).isGreaterThan(before);
    assertThat(counter.partOf(quiet).milliRate()).isLessThan(before);
  }
}
