package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.model.Algorithm;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Every state the engine leaves must pass the checks a peer applies to a handed-off or broadcast
 * bucket, or its count is lost when the ring changes (or, for a GLOBAL key, its owner's broadcast
 * is dropped). Random request sequences on one key (limits, durations and Gregorian codes that
 * change between requests, hits from far below 0 (refunds, which raise {@code remaining} above the
 * limit) to far above the limit, RESET and DRAIN, time moving forward with small steps back),
 * seeded so a failure repeats.
 */
class EngineStatesPassPeerChecksTest {

  private static final long START = 1_767_225_600_000L;
  private static final RateLimitEngine ENGINE = new RateLimitEngine(ZoneOffset.UTC);
  private static final PeerInputValidator VALIDATOR =
      new PeerInputValidator(InputLimits.DEFAULTS, "127.0.0.1:1051");

  @ParameterizedTest
  @EnumSource(Algorithm.class)
  void everyStateTheEngineLeaves_passesThePeerSnapshotChecks(Algorithm algorithm) {
    for (int sequence = 0; sequence < 2_000; sequence++) {
      SplittableRandom random = new SplittableRandom(sequence * 31L + algorithm.ordinal());
      BucketState state = null;
      long now = START + random.nextLong(7 * 24 * 3_600_000L);
      List<RateLimitRequest> sent = new ArrayList<>();
      for (int step = 0; step < 12; step++) {
        now += random.nextInt(10) == 0 ? -random.nextInt(50) : random.nextInt(3_000);
        RateLimitRequest request = request(random, algorithm);
        sent.add(request);
        state = ENGINE.apply(state, request, now).next();
        if (state != null && RateLimitEngine.isLive(state, now)) {
          assertThat(VALIDATOR.checkSnapshot(PeerProtos.toSnapshot("n_k", state), now))
              .as("state %s after %s at %d", state, sent, now)
              .isEmpty();
        }
      }
    }
  }

  private static RateLimitRequest request(SplittableRandom random, Algorithm algorithm) {
    int behavior = 0;
    long duration;
    if (random.nextInt(4) == 0) {
      behavior |= Behavior.DURATION_IS_GREGORIAN;
      duration = random.nextInt(6);
    } else {
      duration = new long[] {1, 3, 100, 1_000, 60_000, 3_600_000}[random.nextInt(6)];
    }
    if (random.nextInt(8) == 0) {
      behavior |= Behavior.RESET_REMAINING;
    }
    if (random.nextInt(4) == 0) {
      behavior |= Behavior.DRAIN_OVER_LIMIT;
    }
    long hits =
        switch (random.nextInt(10)) {
          case 0 -> 0;
          case 1 -> random.nextInt(20, 1_000);
          case 2 -> Long.MAX_VALUE;
          case 3 -> random.nextInt(3) == 0 ? -Long.MAX_VALUE : -random.nextInt(1, 1_000);
          default -> random.nextInt(15);
        };
    return RateLimitRequest.builder("n", "k")
        .algorithm(algorithm)
        .behavior(behavior)
        .limit(random.nextInt(12))
        .burst(random.nextInt(3) == 0 ? random.nextInt(20) : 0)
        .duration(duration)
        .hits(hits)
        .build();
  }
}
