package dev.weir.core.engine;

import dev.weir.core.model.Algorithm;
import dev.weir.core.model.RateLimitRequest;

/** Request builders for engine tests. */
final class Requests {

  /** 2023-11-14T22:13:20Z, a multiple of 1000 ms. */
  static final long NOW = 1_700_000_000_000L;

  private Requests() {}

  static RateLimitRequest.Builder of(Algorithm algorithm, long limit, long duration, long hits) {
    return RateLimitRequest.builder("test", "key")
        .algorithm(algorithm)
        .limit(limit)
        .duration(duration)
        .hits(hits);
  }

  static RateLimitRequest token(long limit, long duration, long hits) {
    return of(Algorithm.TOKEN_BUCKET, limit, duration, hits).build();
  }

  static RateLimitRequest token(long limit, long duration, long hits, int behavior) {
    return of(Algorithm.TOKEN_BUCKET, limit, duration, hits).behavior(behavior).build();
  }

  static RateLimitRequest leaky(long limit, long duration, long hits) {
    return of(Algorithm.LEAKY_BUCKET, limit, duration, hits).build();
  }

  static RateLimitRequest leaky(long limit, long duration, long burst, long hits, int behavior) {
    return of(Algorithm.LEAKY_BUCKET, limit, duration, hits)
        .burst(burst)
        .behavior(behavior)
        .build();
  }

  static RateLimitRequest fixed(long limit, long duration, long hits) {
    return of(Algorithm.FIXED_WINDOW, limit, duration, hits).build();
  }

  static RateLimitRequest fixed(long limit, long duration, long hits, int behavior) {
    return of(Algorithm.FIXED_WINDOW, limit, duration, hits).behavior(behavior).build();
  }

  static RateLimitRequest sliding(long limit, long duration, long hits) {
    return of(Algorithm.SLIDING_WINDOW, limit, duration, hits).build();
  }

  static RateLimitRequest sliding(long limit, long duration, long hits, int behavior) {
    return of(Algorithm.SLIDING_WINDOW, limit, duration, hits).behavior(behavior).build();
  }
}
