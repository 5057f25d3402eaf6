package dev.weir.core.engine;

import static dev.weir.core.engine.Requests.NOW;
import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.Algorithm;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;

class RateLimitEngineTest {

  private final RateLimitEngine engine = new RateLimitEngine(ZoneOffset.UTC);

  @Test
  void apply_priorOfAnotherAlgorithm_isReplacedByANewBucket() {
    BucketState leaky = engine.apply(null, Requests.leaky(10, 1000, 10), NOW).next();
    Decision d = engine.apply(leaky, Requests.token(10, 1000, 1), NOW + 1);
    assertThat(d.response()).isEqualTo(RateLimitResponse.of(Status.UNDER_LIMIT, 10, 9, NOW + 1001));
    assertThat(d.next()).isInstanceOf(TokenBucketState.class);
    Decision back = engine.apply(d.next(), Requests.leaky(10, 1000, 1), NOW + 2);
    assertThat(back.response().remaining()).isEqualTo(9);
    assertThat(engine.apply(back.next(), Requests.fixed(10, 1000, 1), NOW + 3).next())
        .isInstanceOf(FixedWindowState.class);
    assertThat(engine.apply(back.next(), Requests.sliding(10, 1000, 1), NOW + 3).next())
        .isInstanceOf(SlidingWindowState.class);
  }

  @Test
  void apply_expiredPrior_isTreatedAsAbsent() {
    BucketState spent = engine.apply(null, Requests.fixed(1, 1000, 1), NOW).next();
    assertThat(spent.expireAt()).isEqualTo(NOW + 1000);
    TokenBucketState expired = new TokenBucketState(Status.OVER_LIMIT, 5, 1000, 0, NOW - 2000, NOW);
    Decision d = engine.apply(expired, Requests.token(5, 1000, 1), NOW);
    assertThat(d.response()).isEqualTo(RateLimitResponse.of(Status.UNDER_LIMIT, 5, 4, NOW + 1000));
    assertThat(RateLimitEngine.isLive(expired, NOW - 1)).isTrue();
    assertThat(RateLimitEngine.isLive(expired, NOW)).isFalse();
    assertThat(RateLimitEngine.isLive(null, NOW)).isFalse();
  }

  @Test
  void apply_invalidRequest_leavesPriorUnchanged() {
    BucketState prior = engine.apply(null, Requests.token(10, 1000, 3), NOW).next();
    RateLimitRequest bad = Requests.of(Algorithm.TOKEN_BUCKET, -5, 1000, 1).build();
    Decision d = engine.apply(prior, bad, NOW + 1);
    assertThat(d.next()).isSameAs(prior);
    assertThat(d.response())
        .isEqualTo(RateLimitResponse.error("field 'limit' cannot be negative, got -5"));
    RateLimitRequest unknown =
        RateLimitRequest.builder("n", "k").algorithmNumber(4).limit(1).duration(1).build();
    assertThat(engine.apply(null, unknown, NOW).response().error())
        .isEqualTo("Invalid rate limit algorithm '4'");
  }

  @Test
  void apply_multiRegionAndBatchingFlags_changeNothing() {
    int flags = Behavior.MULTI_REGION | Behavior.NO_BATCHING | Behavior.GLOBAL;
    Decision plain = engine.apply(null, Requests.token(10, 1000, 1), NOW);
    Decision flagged = engine.apply(null, Requests.token(10, 1000, 1, flags), NOW);
    assertThat(flagged).isEqualTo(plain);
  }
}
