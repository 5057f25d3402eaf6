package dev.weir.core.time;

import java.time.Duration;

/** The waits between attempts that double after each failure, up to a longest wait. */
public final class Backoff {

  private Backoff() {}

  /** Returns the wait after one of {@code previous}: twice it, but not more than {@code max}. */
  public static Duration doubled(Duration previous, Duration max) {
    Duration twice = previous.multipliedBy(2);
    return twice.compareTo(max) > 0 ? max : twice;
  }
}
