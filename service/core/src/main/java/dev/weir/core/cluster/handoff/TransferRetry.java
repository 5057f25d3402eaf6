package dev.weir.core.cluster.handoff;

import dev.weir.core.time.Backoff;
import dev.weir.core.time.Scheduler;
import dev.weir.ring.HashRing;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * When a ring change's bucket transfer that failed is sent again: on {@code scheduler}, to the
 * owners on the ring {@code ring} gives then, after {@code first}, then twice the previous wait up
 * to {@code max}, {@code attempts} sends in all (the first one included).
 *
 * @param scheduler runs each resend
 * @param ring the current ring
 * @param first the wait after the first failed send
 * @param max the longest wait between two sends
 * @param attempts how many sends in all; 1 sends once and never again
 */
public record TransferRetry(
    Scheduler scheduler, Supplier<HashRing> ring, Duration first, Duration max, int attempts) {

  /** Sends each transfer once: a failed one is not sent again. */
  public static final TransferRetry NONE =
      new TransferRetry(null, null, Duration.ZERO, Duration.ZERO, 1);

  /** Checks that a retrying policy names its scheduler and ring and has positive waits. */
  public TransferRetry {
    if (attempts < 1) {
      throw new IllegalArgumentException("attempts must be at least 1, was " + attempts);
    }
    if (attempts > 1) {
      Objects.requireNonNull(scheduler, "scheduler");
      Objects.requireNonNull(ring, "ring");
      if (first.isNegative() || first.isZero() || max.compareTo(first) < 0) {
        throw new IllegalArgumentException(
            "waits must satisfy 0 < first <= max, were " + first + " and " + max);
      }
    }
  }

  /** Returns the wait after a send that followed a wait of {@code previous}. */
  Duration next(Duration previous) {
    return Backoff.doubled(previous, max);
  }
}
