package dev.weir.http;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The requests a listener is answering: admits a request while fewer than the most allowed are in
 * flight, and once draining admits none and completes a future when the last one is answered.
 */
final class InFlight {

  /** What became of a request that asked to be admitted. */
  enum Admission {
    ADMITTED,
    SATURATED,
    DRAINING
  }

  private final int max;
  private final AtomicInteger count = new AtomicInteger();
  private final CompletableFuture<Void> drained = new CompletableFuture<>();
  private volatile boolean draining;

  /** Creates a counter admitting at most {@code max} requests that are not probes. */
  InFlight(int max) {
    this.max = max;
  }

  /**
   * Admits one request, a probe even when {@code max} are in flight; an admitted request must be
   * {@linkplain #exit() let go} once answered.
   */
  Admission enter(boolean probe) {
    int now = count.incrementAndGet();
    if (draining) {
      exit();
      return Admission.DRAINING;
    }
    if (now > max && !probe) {
      exit();
      return Admission.SATURATED;
    }
    return Admission.ADMITTED;
  }

  /** Lets go of one admitted request. */
  void exit() {
    if (count.decrementAndGet() == 0 && draining) {
      drained.complete(null);
    }
  }

  /** Returns the number of requests in flight. */
  int count() {
    return count.get();
  }

  /** Returns whether {@link #drain()} was called. */
  boolean draining() {
    return draining;
  }

  /**
   * Admits no more requests and returns a future completed once none is in flight (at once when
   * none is).
   */
  CompletableFuture<Void> drain() {
    draining = true;
    if (count.get() == 0) {
      drained.complete(null);
    }
    return drained;
  }
}
