package dev.weir.core.toplimited;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.ReentrantLock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class TopLimitedWindowTest {

  private static final long MINUTE = TopLimitedWindow.SLOT_MILLIS;

  private static LimitedKey key(String value) {
    return new LimitedKey(LimitedKey.ENVOY, "shop", "per-ip", List.of("remote_address", value));
  }

  @Test
  void view_mergesTheMinutesOfTheWindow_highestFirst() {
    TopLimitedWindow window = new TopLimitedWindow(5, 10);
    window.record(key("a"), 1, 0);
    window.record(key("b"), 3, MINUTE);
    window.record(key("b"), 3, 2 * MINUTE);
    window.record(key("a"), 2, 4 * MINUTE + 59_999);
    window.record(key("a"), 2, 4 * MINUTE + 59_999);

    TopLimitedView view = window.view(4 * MINUTE + 59_999);

    assertThat(view.entries())
        .containsExactly(
            new TopLimitedEntry(key("a"), 3, 5, 0), new TopLimitedEntry(key("b"), 2, 6, 0));
    assertThat(view.total()).isEqualTo(5);
  }

  @Test
  void view_leavesOutMinutesOlderThanTheWindow() {
    TopLimitedWindow window = new TopLimitedWindow(5, 10);
    window.record(key("old"), 1, 0);
    window.record(key("new"), 1, MINUTE);

    TopLimitedView view = window.view(5 * MINUTE);

    assertThat(view.entries()).extracting(e -> e.key()).containsExactly(key("new"));
  }

  @Test
  void record_inAMinuteTheRingComesRoundTo_clearsWhatTheSlotHeld() {
    TopLimitedWindow window = new TopLimitedWindow(2, 10);
    window.record(key("old"), 1, 0);
    window.record(key("new"), 1, 2 * MINUTE);

    assertThat(window.view(2 * MINUTE).entries())
        .extracting(e -> e.key())
        .containsExactly(key("new"));
    assertThat(window.view(2 * MINUTE).total()).isEqualTo(1);
  }

  @Test
  void view_ofAnEmptyWindow_isEmpty() {
    assertThat(new TopLimitedWindow(5, 10).view(123_456)).isEqualTo(TopLimitedView.EMPTY);
  }

  @Test
  void merge_keyMissingFromAFullView_errorCoversThatViewsFloor() {
    TopLimitedView full =
        new TopLimitedView(List.of(new TopLimitedEntry(key("a"), 9, 9, 0)), 4, 20);
    TopLimitedView other =
        new TopLimitedView(
            List.of(new TopLimitedEntry(key("a"), 2, 2, 1), new TopLimitedEntry(key("b"), 6, 6, 0)),
            1,
            10);

    TopLimitedView merged = TopLimitedView.merge(List.of(full, other));

    assertThat(merged.entries())
        .containsExactly(
            new TopLimitedEntry(key("a"), 11, 11, 1), new TopLimitedEntry(key("b"), 6, 6, 4));
    assertThat(merged.floor()).isEqualTo(5);
    assertThat(merged.total()).isEqualTo(30);
    assertThat(merged.first(1).entries()).containsExactly(merged.entries().get(0));
  }

  @Test
  void merge_hitsSummingPastTheLongRange_saturateAtLongMax() {
    TopLimitedView one =
        new TopLimitedView(List.of(new TopLimitedEntry(key("a"), 1, Long.MAX_VALUE, 0)), 0, 1);
    TopLimitedView two =
        new TopLimitedView(List.of(new TopLimitedEntry(key("a"), 1, Long.MAX_VALUE, 0)), 0, 1);

    assertThat(TopLimitedView.merge(List.of(one, two)).entries())
        .containsExactly(new TopLimitedEntry(key("a"), 2, Long.MAX_VALUE, 0));
  }

  @Test
  void view_minutesWhoseHitsSumPastTheLongRange_saturatesAtLongMax() {
    TopLimitedWindow window = new TopLimitedWindow(5, 10);
    window.record(key("a"), Long.MAX_VALUE, 0);
    window.record(key("a"), Long.MAX_VALUE, MINUTE);

    assertThat(window.view(MINUTE).entries())
        .containsExactly(new TopLimitedEntry(key("a"), 2, Long.MAX_VALUE, 0));
  }

  @Test
  void manyMinutesOfFloods_heavyKeyCountWithinTheTotalOverCounters() {
    int counters = 20;
    TopLimitedWindow window = new TopLimitedWindow(5, counters);
    long heavyTrue = 0;
    long total = 0;
    for (int minute = 0; minute < 5; minute++) {
      for (int i = 0; i < 2_000; i++) {
        window.record(key("flood-" + minute + "-" + i), 1, minute * MINUTE + i);
        total++;
        if (i % 20 == 0) {
          window.record(key("heavy"), 1, minute * MINUTE + i);
          heavyTrue++;
          total++;
        }
      }
    }

    TopLimitedView view = window.view(4 * MINUTE + 30_000);
    TopLimitedEntry top = view.entries().get(0);

    assertThat(top.key()).isEqualTo(key("heavy"));
    assertThat(Math.abs(top.overLimit() - heavyTrue)).isLessThanOrEqualTo(top.error());
    assertThat(top.error()).isLessThanOrEqualTo(total / counters);
    assertThat(view.total()).isEqualTo(total);
  }

  @Test
  @Timeout(10)
  void record_whileAnotherThreadCounts_isSkippedAtOnceAndCountedAsSkipped() throws Exception {
    ReentrantLock lock = new ReentrantLock();
    TopLimitedWindow window = new TopLimitedWindow(5, 10, lock);
    CountDownLatch held = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Thread counting =
        new Thread(
            () -> {
              lock.lock();
              try {
                held.countDown();
                release.await();
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              } finally {
                lock.unlock();
              }
            });
    counting.start();
    held.await();

    window.record(key("flood"), 1, 0);
    release.countDown();
    counting.join();
    window.record(key("later"), 1, 0);

    assertThat(window.skipped()).isEqualTo(1);
    assertThat(window.view(0).entries())
        .extracting(e -> e.key().entries().get(1))
        .containsExactly("later");
  }
}
