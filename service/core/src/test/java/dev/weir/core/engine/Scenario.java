package dev.weir.core.engine;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import java.time.ZoneOffset;

/** A bucket driven through the engine step by step, as a store would keep it. */
final class Scenario {

  private final RateLimitEngine engine;
  private BucketState state;

  Scenario(RateLimitEngine engine) {
    this.engine = engine;
  }

  Scenario() {
    this(new RateLimitEngine(ZoneOffset.UTC));
  }

  RateLimitResponse send(RateLimitRequest request, long now) {
    Decision d = engine.apply(state, request, now);
    state = d.next();
    return d.response();
  }

  BucketState state() {
    return state;
  }

  void state(BucketState newState) {
    state = newState;
  }
}
