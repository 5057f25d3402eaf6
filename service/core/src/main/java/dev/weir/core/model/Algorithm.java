package dev.weir.core.model;

import java.util.Optional;

/** A rate-limit algorithm, numbered as on the wire ({@code pb.gubernator.Algorithm}). */
public enum Algorithm {
  /** Gubernator's token bucket: a window of {@code duration} starting at the first hit. */
  TOKEN_BUCKET(0),
  /** Gubernator's leaky bucket: {@code limit} tokens leak back per {@code duration}, up to {@code burst}. */
  LEAKY_BUCKET(1),
  /** A window aligned to the Unix epoch, counted like envoyproxy/ratelimit. */
  FIXED_WINDOW(2),
  /** The previous window's count weighted by its overlap, plus the current window's count. */
  SLIDING_WINDOW(3);

  private final int number;

  Algorithm(int number) {
    this.number = number;
  }

  /** Returns the wire number of this algorithm. */
  public int number() {
    return number;
  }

  /** Returns the algorithm with wire number {@code number}, or empty when there is none. */
  public static Optional<Algorithm> forNumber(int number) {
    for (Algorithm a : values()) {
      if (a.number == number) {
        return Optional.of(a);
      }
    }
    return Optional.empty();
  }
}
