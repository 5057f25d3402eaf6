package dev.weir.e2e.envoy;

import java.time.Duration;

/**
 * Keeps a scripted run inside one fixed window. The front proxy's rules count per minute in windows
 * aligned to the Unix epoch (envoyproxy/ratelimit's semantics), so a run that crosses a minute
 * boundary would see its counters reset half-way; starting with enough of the current minute left
 * avoids that.
 */
final class FixedWindows {
  /**
   * How much of the current minute a scripted run needs; every script here finishes well within it.
   */
  static final Duration MARGIN = Duration.ofSeconds(25);

  private FixedWindows() {}

  /**
   * Returns at once when at least {@link #MARGIN} of the current minute is left, else waits for the
   * next one.
   */
  static void awaitMarginInCurrentMinute() {
    long now = System.currentTimeMillis();
    long leftMillis = 60_000 - now % 60_000;
    if (leftMillis >= MARGIN.toMillis()) {
      return;
    }
    System.out.printf(
        "waiting %d ms for the next minute so the script runs inside one window%n",
        leftMillis + 100);
    try {
      Thread.sleep(leftMillis + 100);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for the next minute", e);
    }
  }
}
