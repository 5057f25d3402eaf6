package dev.weir.core.cluster;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.LocalCluster;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The hand-off measurement: three in-JVM nodes, one key limited to {@value #LIMIT} per {@value
 * #WINDOW_MS} ms (token bucket), one request every {@value #INTERVAL_MS} ms sent round-robin to the
 * nodes (5 × the limit), and each node restarted in turn (graceful leave, then a fresh member with
 * an empty store joins on the same address) in the middle of windows 1, 2 and 3. Prints, per
 * window, the requests admitted against the limit, once with hand-off on and once off. Runs about
 * 100 s (one unmeasured warm-up pass first). Run with {@code scripts/bench-handoff.sh}.
 */
public final class HandOffBenchMain {

  static final long LIMIT = 100;
  static final long WINDOW_MS = 10_000;
  static final long INTERVAL_MS = 20;
  static final int WINDOWS = 3;

  private HandOffBenchMain() {}

  /** Runs the measurement with hand-off on, then off, and prints a Markdown table. */
  public static void main(String[] args) throws Exception {
    // A first, unmeasured pass warms up the JVM and the channels.
    run(true);
    long[][] on = run(true);
    long[][] off = run(false);
    System.out.println("| window | restarted node | hand-off on: admitted / limit | errors | hand-off off: admitted / limit | errors |");
    System.out.println("|---|---|---|---|---|---|");
    for (int w = 0; w < WINDOWS; w++) {
      System.out.printf(
          "| %d | node %d | %d / %d | %d | %d / %d | %d |%n",
          w + 1, w, on[0][w], LIMIT, on[1][w], off[0][w], LIMIT, off[1][w]);
    }
  }

  // Returns {admitted per window, errors per window}.
  private static long[][] run(boolean handoff) throws Exception {
    AtomicLongArray admitted = new AtomicLongArray(WINDOWS);
    AtomicLongArray errors = new AtomicLongArray(WINDOWS);
    try (LocalCluster cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS.withHandoff(handoff))) {
      AtomicBoolean running = new AtomicBoolean(true);
      long start = System.currentTimeMillis();
      Thread load =
          new Thread(
              () -> {
                long n = 0;
                while (running.get()) {
                  long at = System.currentTimeMillis() - start;
                  int window = (int) (at / WINDOW_MS);
                  if (window >= WINDOWS) {
                    break;
                  }
                  RateLimitRequest r =
                      RateLimitRequest.builder("bench", "handoff")
                          .hits(1)
                          .limit(LIMIT)
                          .duration(WINDOW_MS)
                          .build();
                  try {
                    RateLimitResponse resp = cluster.node((int) (n++ % 3)).check(r).get(0);
                    if (!resp.error().isEmpty()) {
                      errors.incrementAndGet(window);
                    } else if (resp.status() == Status.UNDER_LIMIT) {
                      admitted.incrementAndGet(window);
                    }
                  } catch (RuntimeException e) {
                    errors.incrementAndGet(window);
                  }
                  sleepUntil(start + n * INTERVAL_MS);
                }
              },
              "handoff-bench-load");
      load.start();
      for (int w = 0; w < WINDOWS; w++) {
        sleepUntil(start + w * WINDOW_MS + WINDOW_MS / 2);
        cluster.restart(cluster.node(w));
      }
      load.join();
      running.set(false);
    }
    long[] a = new long[WINDOWS];
    long[] e = new long[WINDOWS];
    for (int w = 0; w < WINDOWS; w++) {
      a[w] = admitted.get(w);
      e[w] = errors.get(w);
    }
    return new long[][] {a, e};
  }

  private static void sleepUntil(long epochMillis) {
    long wait = epochMillis - System.currentTimeMillis();
    if (wait > 0) {
      try {
        Thread.sleep(wait);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
