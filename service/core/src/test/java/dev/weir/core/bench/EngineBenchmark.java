package dev.weir.core.bench;

import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.Decision;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.model.Algorithm;
import dev.weir.core.model.RateLimitRequest;
import java.time.ZoneOffset;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The engine alone on one hot bucket: one decision per call, the state carried from call to call
 * and the clock moving 1 ms per call, so leaks and window roll-overs are exercised.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class EngineBenchmark {

  @Param({"TOKEN_BUCKET", "LEAKY_BUCKET", "FIXED_WINDOW", "SLIDING_WINDOW"})
  public Algorithm algorithm;

  private RateLimitEngine engine;
  private RateLimitRequest request;
  private BucketState state;
  private long now;

  /** Builds a request that stays mostly under its limit: 1 000 000 per minute. */
  @Setup
  public void setUp() {
    engine = new RateLimitEngine(ZoneOffset.UTC);
    request =
        RateLimitRequest.builder("requests_per_minute", "account:1234")
            .algorithm(algorithm)
            .limit(1_000_000)
            .duration(60_000)
            .hits(1)
            .build();
    now = 1_700_000_000_000L;
  }

  /** Decides one request on the hot bucket. */
  @Benchmark
  public Decision decide() {
    Decision d = engine.apply(state, request, now++);
    state = d.next();
    return d;
  }
}
