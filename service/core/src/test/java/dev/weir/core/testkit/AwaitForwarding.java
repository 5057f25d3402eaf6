package dev.weir.core.testkit;

import dev.weir.core.RateLimiter;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;

/**
 * Waits until every member of a freshly started cluster answers keys owned by the others without a
 * forwarding error. A member that dialed a peer before the peer listened waits out gRPC's reconnect
 * back-off (about a second) before its calls to that peer get through.
 */
public final class AwaitForwarding {

  private static final Duration LIMIT = Duration.ofSeconds(30);
  private static final int PROBES = 64;

  private AwaitForwarding() {}

  /** Blocks until a round of probe checks (0 hits) on every member comes back without errors. */
  public static void on(List<? extends RateLimiter> members) throws InterruptedException {
    long deadline = System.nanoTime() + LIMIT.toNanos();
    // Random keys: FNV-1a places keys that differ only in their last characters on one owner.
    Random random = new Random(3);
    List<RateLimitRequest> probes =
        IntStream.range(0, PROBES)
            .mapToObj(
                i ->
                    RateLimitRequest.builder(
                            "await_forwarding", Long.toHexString(random.nextLong()))
                        .hits(0)
                        .limit(1)
                        .duration(1000)
                        .build())
            .toList();
    while (true) {
      String error = firstError(members, probes);
      if (error == null) {
        return;
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("forwarding still fails after " + LIMIT + ": " + error);
      }
      Thread.sleep(50);
    }
  }

  private static String firstError(
      List<? extends RateLimiter> members, List<RateLimitRequest> probes) {
    for (RateLimiter member : members) {
      for (RateLimitResponse response : member.decideAll(probes).join()) {
        if (response.isError()) {
          return response.error();
        }
      }
    }
    return null;
  }
}
