package dev.weir.core.testkit;

import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;

/** Random values and answers for the wire codecs' tests: edge numbers, metadata with non-ASCII keys. */
public final class WireSamples {

  private static final long[] EDGES = {
    0, 1, -1, 127, 128, 1_000, 3_600_000, Integer.MAX_VALUE, Integer.MIN_VALUE,
    Long.MAX_VALUE, Long.MIN_VALUE, 1_767_225_600_000L
  };

  private WireSamples() {}

  /** Returns a random long, an edge of the varint encoding two times in three. */
  public static long edge(Random random) {
    return random.nextInt(3) == 0 ? random.nextLong() : EDGES[random.nextInt(EDGES.length)];
  }

  /** Returns a random answer: an error one time in eight, else a status, numbers and metadata. */
  public static RateLimitResponse answer(Random random) {
    if (random.nextInt(8) == 0) {
      return RateLimitResponse.error("error " + random.nextInt());
    }
    Map<String, String> metadata = new LinkedHashMap<>();
    for (int k = random.nextInt(4) == 0 ? random.nextInt(4) : 0; k > 0; k--) {
      metadata.put(
          random.nextInt(5) == 0 ? "ключ\uD83D\uDE00" + k : "owner" + k,
          random.nextBoolean() ? "" : "127.0.0.1:" + random.nextInt(65536));
    }
    return new RateLimitResponse(
        random.nextBoolean() ? Status.UNDER_LIMIT : Status.OVER_LIMIT,
        edge(random),
        edge(random),
        edge(random),
        "",
        metadata);
  }
}
