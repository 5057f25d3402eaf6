package dev.weir.core.engine;

import static dev.weir.core.engine.Requests.NOW;
import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.Algorithm;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;

/**
 * Properties of the engine over random request sequences with a fixed configuration and
 * non-negative hits.
 *
 * <p>On {@code hits = 0}: a query never changes a live token bucket's state. For the other
 * algorithms a query may normalise the state to {@code now} (a leaky bucket credits whole leak
 * periods and caps at burst; a window moves on), which no next request can tell apart: the next
 * answer is the same with or without the query.
 */
class EnginePropertiesTest {

  private final RateLimitEngine engine = new RateLimitEngine(ZoneOffset.UTC);

  /** One request of a sequence: {@code gap} ms after the previous one. */
  record Hit(int gap, int hits, boolean drain) {}

  @Provide
  Arbitrary<List<Hit>> sequence() {
    return Combinators.combine(
            Arbitraries.integers().between(0, 400),
            Arbitraries.integers().between(0, 25),
            Arbitraries.of(false, false, true))
        .as(Hit::new)
        .list()
        .ofMinSize(1)
        .ofMaxSize(40);
  }

  private static RateLimitRequest request(
      Algorithm algorithm, long limit, long duration, long burst, Hit hit) {
    return Requests.of(algorithm, limit, duration, hit.hits())
        .burst(algorithm == Algorithm.LEAKY_BUCKET ? burst : 0)
        .behavior(hit.drain() ? Behavior.DRAIN_OVER_LIMIT : 0)
        .build();
  }

  private static boolean admitted(Hit hit, RateLimitResponse r) {
    return hit.hits() > 0 && r.status() == Status.UNDER_LIMIT;
  }

  @Property
  void tokenBucket_admittedHitsInOneWindow_neverExceedLimit(
      @ForAll @IntRange(max = 20) int limit,
      @ForAll @IntRange(min = 1, max = 5000) int duration,
      @ForAll("sequence") List<Hit> hits) {
    Scenario s = new Scenario(engine);
    long t = NOW;
    long admitted = 0;
    for (Hit hit : hits) {
      t += hit.gap();
      if (t - NOW > duration) {
        break;
      }
      RateLimitResponse r = s.send(request(Algorithm.TOKEN_BUCKET, limit, duration, 0, hit), t);
      admitted += admitted(hit, r) ? hit.hits() : 0;
      assertThat(r.remaining()).isBetween(0L, (long) limit);
    }
    assertThat(admitted).isLessThanOrEqualTo(limit);
  }

  @Property
  void windows_admittedHitsPerWindow_neverExceedLimit(
      @ForAll @IntRange(max = 20) int limit,
      @ForAll @IntRange(min = 1, max = 3000) int duration,
      @ForAll boolean sliding,
      @ForAll("sequence") List<Hit> hits) {
    Algorithm algorithm = sliding ? Algorithm.SLIDING_WINDOW : Algorithm.FIXED_WINDOW;
    Scenario s = new Scenario(engine);
    Map<Long, Long> admittedPerWindow = new HashMap<>();
    long t = NOW;
    for (Hit hit : hits) {
      t += hit.gap();
      RateLimitResponse r = s.send(request(algorithm, limit, duration, 0, hit), t);
      if (admitted(hit, r)) {
        admittedPerWindow.merge(Math.floorDiv(t, duration), (long) hit.hits(), Long::sum);
      }
      assertThat(r.remaining()).isBetween(0L, (long) limit);
    }
    assertThat(admittedPerWindow.values())
        .allSatisfy(n -> assertThat(n).isLessThanOrEqualTo(limit));
  }

  @Property
  void leakyBucket_admittedHits_neverExceedBurstPlusLeaked(
      @ForAll @IntRange(min = 1, max = 20) int limit,
      @ForAll @IntRange(max = 30) int burst,
      @ForAll @IntRange(min = 401, max = 5000) int duration,
      @ForAll("sequence") List<Hit> hits) {
    long capacity = burst == 0 ? limit : burst;
    Scenario s = new Scenario(engine);
    long t = NOW;
    long admitted = 0;
    for (Hit hit : hits) {
      t += hit.gap();
      Hit nonZero = new Hit(hit.gap(), Math.max(1, hit.hits()), hit.drain());
      RateLimitResponse r =
          s.send(request(Algorithm.LEAKY_BUCKET, limit, duration, burst, nonZero), t);
      admitted += admitted(nonZero, r) ? nonZero.hits() : 0;
      assertThat(r.remaining()).isBetween(0L, capacity);
      long leaked = (t - NOW) * limit / duration;
      assertThat(admitted).isLessThanOrEqualTo(capacity + leaked);
    }
  }

  /**
   * Requests stamped out of order (up to {@code skew} ms before the latest, as forwarded items and
   * GLOBAL sums are) still see a remaining within {@code [0, burst]} and never get more than the
   * burst plus what leaked by the latest time, drained or not. (A duration above the largest gap
   * plus twice the skew keeps the bucket from expiring idle, after which it starts over full.)
   */
  @Property
  void leakyBucket_requestsStampedOutOfOrder_remainingInRangeAndNoTokenInvented(
      @ForAll @IntRange(min = 1, max = 120) int limit,
      @ForAll @IntRange(max = 30) int burst,
      @ForAll @IntRange(min = 600, max = 5000) int duration,
      @ForAll @IntRange(max = 60) int skew,
      @ForAll("sequence") List<Hit> hits) {
    long capacity = burst == 0 ? limit : burst;
    Scenario s = new Scenario(engine);
    long latest = NOW;
    long admitted = 0;
    int i = 0;
    for (Hit hit : hits) {
      latest += hit.gap();
      long t = Math.max(NOW, latest - (i++ * 7919L) % (skew + 1));
      // Non-zero hits keep the bucket alive (an idle one starts over full, as documented).
      Hit nonZero = new Hit(hit.gap(), Math.max(1, hit.hits()), hit.drain());
      RateLimitResponse r =
          s.send(request(Algorithm.LEAKY_BUCKET, limit, duration, burst, nonZero), t);
      admitted += admitted(nonZero, r) ? nonZero.hits() : 0;
      assertThat(r.remaining()).isBetween(0L, capacity);
      long leaked = (latest - NOW) * limit / duration;
      assertThat(admitted).isLessThanOrEqualTo(capacity + leaked);
    }
  }

  @Property
  void query_onLiveBucket_isInvisibleToTheNextRequest(
      @ForAll("algorithms") Algorithm algorithm,
      @ForAll @IntRange(max = 20) int limit,
      @ForAll @IntRange(min = 1, max = 2000) int duration,
      @ForAll @IntRange(max = 30) int burst,
      @ForAll("sequence") List<Hit> history,
      @ForAll @LongRange(max = 3000) long queryGap,
      @ForAll @LongRange(max = 3000) long nextGap,
      @ForAll @IntRange(max = 25) int nextHits,
      @ForAll boolean nextDrain) {
    Scenario s = new Scenario(engine);
    long t = NOW;
    for (Hit hit : history) {
      t += hit.gap();
      s.send(request(algorithm, limit, duration, burst, hit), t);
    }
    BucketState prior = s.state();
    long queryAt = t + queryGap;
    if (!RateLimitEngine.isLive(prior, queryAt)) {
      return;
    }
    Decision query =
        engine.apply(
            prior, request(algorithm, limit, duration, burst, new Hit(0, 0, false)), queryAt);
    if (algorithm == Algorithm.TOKEN_BUCKET) {
      assertThat(query.next()).isEqualTo(prior);
    }
    RateLimitRequest next =
        request(algorithm, limit, duration, burst, new Hit(0, nextHits, nextDrain));
    long nextAt = queryAt + nextGap;
    assertThat(engine.apply(query.next(), next, nextAt).response())
        .isEqualTo(engine.apply(prior, next, nextAt).response());
  }

  /**
   * A refused request without DRAIN leaves the tokens as they were. (A leaky bucket still slides
   * its idle expiry on any non-zero hit, as Gubernator does, so the comparison is made while the
   * prior state is live.)
   */
  @Property
  void overLimitWithoutDrain_consumesNothing(
      @ForAll("consuming") Algorithm algorithm,
      @ForAll @IntRange(max = 20) int limit,
      @ForAll @IntRange(min = 1, max = 2000) int duration,
      @ForAll @IntRange(max = 30) int burst,
      @ForAll("sequence") List<Hit> history,
      @ForAll @IntRange(min = 1, max = 40) int hits,
      @ForAll @LongRange(max = 3000) long gap,
      @ForAll @LongRange(max = 3000) long queryGap) {
    Scenario s = new Scenario(engine);
    long t = NOW;
    for (Hit hit : history) {
      t += hit.gap();
      s.send(request(algorithm, limit, duration, burst, hit), t);
    }
    BucketState prior = s.state();
    long at = t + gap;
    if (!RateLimitEngine.isLive(prior, at)) {
      return;
    }
    Decision refused =
        engine.apply(
            prior, request(algorithm, limit, duration, burst, new Hit(0, hits, false)), at);
    if (refused.response().status() != Status.OVER_LIMIT) {
      return;
    }
    RateLimitRequest query = request(algorithm, limit, duration, burst, new Hit(0, 0, false));
    long queryAt = at + queryGap;
    if (!RateLimitEngine.isLive(prior, queryAt)) {
      return;
    }
    assertThat(engine.apply(refused.next(), query, queryAt).response().remaining())
        .isEqualTo(engine.apply(prior, query, queryAt).response().remaining());
  }

  @Provide
  Arbitrary<Algorithm> algorithms() {
    return Arbitraries.of(Algorithm.class);
  }

  @Provide
  Arbitrary<Algorithm> consuming() {
    return Arbitraries.of(Algorithm.TOKEN_BUCKET, Algorithm.LEAKY_BUCKET, Algorithm.SLIDING_WINDOW);
  }
}
