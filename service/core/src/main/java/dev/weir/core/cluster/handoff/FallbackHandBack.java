package dev.weir.core.cluster.handoff;

import dev.weir.core.concurrent.Completions;
import dev.weir.ring.HashRing;
import java.util.Collection;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The hand-back of the keys taken from {@link FallbackCounts} to their owners: the keys whose
 * transfer failed, every key taken when the send failed as a whole, are remembered again once
 * ({@link FallbackCounts#sendFailed}), and a WARN says how many failed and whose counts are lost.
 */
public final class FallbackHandBack {

  private static final Logger LOG = LoggerFactory.getLogger(FallbackHandBack.class);

  /** Sends buckets to their owners ({@link HandOff#handBack}). */
  @FunctionalInterface
  public interface Sender {

    /**
     * Sends the buckets of {@code keys} to their owners on {@code ring}; completes with the keys
     * whose transfer failed.
     */
    CompletableFuture<Set<String>> send(Collection<String> keys, HashRing ring);
  }

  private final FallbackCounts counts;
  private final Sender sender;

  /** Creates the hand-back of the keys taken from {@code counts}, sent through {@code sender}. */
  public FallbackHandBack(FallbackCounts counts, Sender sender) {
    this.counts = counts;
    this.sender = sender;
  }

  /**
   * Sends the buckets of the keys {@code taken} to their owners on {@code ring}; completes, never
   * exceptionally, once those whose transfer failed are remembered again: every key taken when the
   * send fails as a whole (it throws, or its future fails).
   */
  public CompletableFuture<Void> send(FallbackCounts.Taken taken, HashRing ring) {
    if (taken.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    CompletableFuture<Set<String>> sent;
    try {
      sent = sender.send(taken.keys(), ring);
    } catch (RuntimeException e) {
      sent = CompletableFuture.failedFuture(e);
    }
    return sent.handle(
        (failed, error) -> {
          if (error != null) {
            rememberAgain(taken, taken.keys(), ": " + Completions.cause(error));
          } else if (!failed.isEmpty()) {
            rememberAgain(taken, failed, "");
          }
          return null;
        });
  }

  // Remembers failed again and warns; why, when not empty, says why the whole send failed.
  private void rememberAgain(FallbackCounts.Taken taken, Collection<String> failed, String why) {
    int lost = counts.sendFailed(taken, failed);
    LOG.warn(
        "{} of {} buckets counted while their owner was not reached did not reach it{};"
            + " {} are sent when it next returns or answers a hand-on, the counts of {}"
            + " are lost",
        failed.size(),
        taken.keys().size(),
        why,
        failed.size() - lost,
        lost);
  }
}
