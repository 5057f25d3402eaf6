package dev.weir.core.bench;

import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.model.Algorithm;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.store.ClockBucketStore;
import dev.weir.core.time.SystemClock;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.time.ZoneOffset;

/**
 * Measures the heap held per live bucket: fills a {@link ClockBucketStore} with N buckets of one
 * algorithm and prints the used-heap difference after full GCs, divided by N. Keys are {@code
 * "requests_per_minute_account:<i>"} (35-40 chars), whose strings are included in the figure.
 *
 * <p>Usage: {@code java -Xmx2g -cp ... dev.weir.core.bench.BucketMemoryMain [count] [ALGORITHM]}.
 */
public final class BucketMemoryMain {

  private BucketMemoryMain() {}

  /** Runs the measurement. */
  public static void main(String[] args) {
    int count = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    Algorithm algorithm = args.length > 1 ? Algorithm.valueOf(args[1]) : Algorithm.TOKEN_BUCKET;
    RateLimitEngine engine = new RateLimitEngine(ZoneOffset.UTC);
    RateLimitRequest request =
        RateLimitRequest.builder("requests_per_minute", "account")
            .algorithm(algorithm)
            .limit(100)
            .duration(3_600_000)
            .hits(1)
            .build();
    MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
    ClockBucketStore store = new ClockBucketStore(SystemClock.INSTANCE, 2L * count);
    long before = usedAfterGc(memory);
    for (int i = 0; i < count; i++) {
      long now = SystemClock.INSTANCE.wallMillis();
      store.update(
          "requests_per_minute_account:" + i, now, prior -> engine.apply(prior, request, now));
    }
    store.cleanUp();
    long after = usedAfterGc(memory);
    System.out.printf(
        "%s: %d live buckets, %d bytes of heap, %.1f bytes per bucket (store size %d)%n",
        algorithm, count, after - before, (after - before) / (double) count, store.size());
  }

  private static long usedAfterGc(MemoryMXBean memory) {
    long used = Long.MAX_VALUE;
    for (int i = 0; i < 5; i++) {
      System.gc();
      used = Math.min(used, memory.getHeapMemoryUsage().getUsed());
    }
    return used;
  }
}
