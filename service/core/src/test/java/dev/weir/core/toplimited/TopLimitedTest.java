package dev.weir.core.toplimited;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.time.Clock;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class TopLimitedTest {

  /** A clock whose wall time a test sets anywhere, backwards too, while monotonic time only grows. */
  private static final class SteppedClock implements Clock {
    long wallMillis = 1_767_225_600_000L;
    long nanos = 5_000_000_000L;

    @Override
    public long wallMillis() {
      return wallMillis;
    }

    @Override
    public long monotonicNanos() {
      return nanos;
    }

    void elapse(Duration step) {
      wallMillis += step.toMillis();
      nanos += step.toNanos();
    }
  }

  private static LimitedKey key(String value) {
    return new LimitedKey(LimitedKey.ENVOY, "shop", "per-ip", List.of("remote_address", value));
  }

  private static List<LimitedKey> keys(TopLimited topLimited) {
    return topLimited.view().entries().stream().map(TopLimitedEntry::key).toList();
  }

  @Test
  void wallClockSteppedBack_keepsTheKeysOfTheLastMinutes() {
    SteppedClock clock = new SteppedClock();
    TopLimited topLimited = new TopLimited(new TopLimitedWindow(5, 10), clock);
    topLimited.overLimit(key("a"), 1);

    clock.wallMillis -= Duration.ofHours(1).toMillis();
    clock.elapse(Duration.ofSeconds(1));

    assertThat(keys(topLimited)).containsExactly(key("a"));
  }

  @Test
  void wallClockSteppedBackThenCaughtUp_keysOlderThanTheWindowStayOut() {
    SteppedClock clock = new SteppedClock();
    TopLimited topLimited = new TopLimited(new TopLimitedWindow(5, 10), clock);
    topLimited.overLimit(key("old"), 1);
    clock.wallMillis -= Duration.ofHours(1).toMillis();

    clock.elapse(Duration.ofHours(1));
    topLimited.overLimit(key("new"), 1);

    assertThat(keys(topLimited)).containsExactly(key("new"));
  }

  @Test
  void keysOlderThanTheWindow_leaveIt() {
    SteppedClock clock = new SteppedClock();
    TopLimited topLimited = new TopLimited(new TopLimitedWindow(5, 10), clock);
    topLimited.overLimit(key("a"), 1);

    clock.elapse(Duration.ofMinutes(5));

    assertThat(keys(topLimited)).isEmpty();
  }
}
