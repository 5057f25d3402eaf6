package dev.weir.core.cluster.snapshot;

import dev.weir.core.cluster.handoff.HandOff;
import dev.weir.core.cluster.peer.PeerInputValidator;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * The snapshot measurement: a store of {@code N} token buckets (default 1 000 000; keys like {@code
 * requests_per_user_000000123456}, 30 bytes) saved to a snapshot file, then loaded into an empty
 * store through {@link HandOff#restore}, as a starting node does. Prints the time of each step, the
 * file's size and the heap used after loading; three passes, the first warming up. Run with {@code
 * scripts/bench-snapshot.sh [N]}.
 */
public final class SnapshotBenchMain {

  private SnapshotBenchMain() {}

  /** Runs the measurement for {@code args[0]} buckets (default 1 000 000). */
  public static void main(String[] args) throws Exception {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    FakeClock clock = new FakeClock();
    long now = clock.wallMillis();
    InMemoryBucketStore source = new InMemoryBucketStore(clock);
    for (int i = 0; i < n; i++) {
      source.put(
          String.format("requests_per_user_%012d", i),
          new TokenBucketState(
              Status.UNDER_LIMIT,
              1000,
              3_600_000,
              1000 - i % 1000,
              now - i % 60_000,
              now + 3_600_000));
    }
    Path dir = Files.createTempDirectory("weir-snapshot-bench");
    String self = "10.0.0.1:1051";
    SnapshotDirectory snapshots =
        new SnapshotDirectory(dir, self, new PeerInputValidator(InputLimits.DEFAULTS, self), clock);
    try {
      for (int pass = 0; pass < 3; pass++) {
        long t0 = System.nanoTime();
        int written = snapshots.save(source);
        long t1 = System.nanoTime();
        long size = Files.size(snapshots.ownFile());
        InMemoryBucketStore target = new InMemoryBucketStore(clock);
        HandOff handOff = new HandOff(self, target, null, clock, Duration.ofSeconds(1));
        long t2 = System.nanoTime();
        SnapshotDirectory.Loaded loaded = snapshots.load(handOff::restore);
        long t3 = System.nanoTime();
        System.gc();
        Runtime rt = Runtime.getRuntime();
        System.out.printf(
            "pass %d: %d buckets, file %.1f MB (%.1f bytes per bucket), save %d ms, "
                + "load and merge %d ms (%d loaded, store %d), heap used after %d MB%n",
            pass,
            written,
            size / 1e6,
            (double) size / written,
            (t1 - t0) / 1_000_000,
            (t3 - t2) / 1_000_000,
            loaded.bucketCount(),
            target.size(),
            (rt.totalMemory() - rt.freeMemory()) >> 20);
      }
    } finally {
      try (Stream<Path> files = Files.walk(dir)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }
}
