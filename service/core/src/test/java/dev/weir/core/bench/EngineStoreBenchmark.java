package dev.weir.core.bench;

import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.store.ClockBucketStore;
import dev.weir.core.time.Clock;
import dev.weir.core.time.SystemClock;
import java.time.ZoneOffset;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;

/**
 * The engine through {@link ClockBucketStore}, as the local limiter runs it: read the wall clock,
 * then one locked update per decision. Token bucket, 1 000 000 per minute; a hot key shared by
 * every thread, or 1 M distinct keys (store bound 2 M, so nothing is evicted). The fork's heap is
 * fixed and touched before the run, so neither heap growth nor first-touch page faults of the
 * ~170 MB working set are measured (without it, iterations of one run varied threefold).
 */
@BenchmarkMode(Mode.Throughput)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g", "-XX:+AlwaysPreTouch"})
@OutputTimeUnit(TimeUnit.SECONDS)
public class EngineStoreBenchmark {

  static final int DISTINCT_KEYS = 1_000_000;

  /** The store, engine and keys shared by all benchmark threads. */
  @State(Scope.Benchmark)
  public static class Shared {
    final Clock clock = SystemClock.INSTANCE;
    final RateLimitEngine engine = new RateLimitEngine(ZoneOffset.UTC);
    final ClockBucketStore store = new ClockBucketStore(clock, 2 * DISTINCT_KEYS);
    final RateLimitRequest request =
        RateLimitRequest.builder("requests_per_minute", "account")
            .limit(1_000_000)
            .duration(60_000)
            .hits(1)
            .build();
    String[] keys;

    /** Creates the distinct keys. */
    @Setup
    public void setUp() {
      keys = new String[DISTINCT_KEYS];
      for (int i = 0; i < DISTINCT_KEYS; i++) {
        keys[i] = "requests_per_minute_account:" + i;
      }
    }

    RateLimitResponse decide(String key) {
      long now = clock.wallMillis();
      return store.update(key, now, prior -> engine.apply(prior, request, now));
    }
  }

  /** A thread's position in the key space. */
  @State(Scope.Thread)
  public static class Cursor {
    int next;

    /** Starts each thread at a random key. */
    @Setup
    public void setUp() {
      next = ThreadLocalRandom.current().nextInt(DISTINCT_KEYS);
    }

    String advance(String[] keys) {
      int i = next;
      next = i + 1 == keys.length ? 0 : i + 1;
      return keys[i];
    }
  }

  /** One thread on one hot key. */
  @Benchmark
  @Threads(1)
  public RateLimitResponse hotKey1Thread(Shared s) {
    return s.decide("requests_per_minute_account:hot");
  }

  /** Two threads on the same hot key. */
  @Benchmark
  @Threads(2)
  public RateLimitResponse hotKey2Threads(Shared s) {
    return s.decide("requests_per_minute_account:hot");
  }

  /** One thread walking 1 M distinct keys. */
  @Benchmark
  @Threads(1)
  public RateLimitResponse distinctKeys1Thread(Shared s, Cursor c) {
    return s.decide(c.advance(s.keys));
  }

  /** Two threads walking 1 M distinct keys. */
  @Benchmark
  @Threads(2)
  public RateLimitResponse distinctKeys2Threads(Shared s, Cursor c) {
    return s.decide(c.advance(s.keys));
  }
}
