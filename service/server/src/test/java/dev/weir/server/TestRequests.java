package dev.weir.server;

import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.RateLimitReq;

/** Requests the node tests send. */
final class TestRequests {

  private TestRequests() {}

  /** Returns a {@code GetRateLimits} of one hit on key {@code k} of {@code n}, per minute. */
  static GetRateLimitsReq oneHit(long limit) {
    return GetRateLimitsReq.newBuilder()
        .addRequests(
            RateLimitReq.newBuilder()
                .setName("n")
                .setUniqueKey("k")
                .setHits(1)
                .setLimit(limit)
                .setDuration(60_000))
        .build();
  }
}
