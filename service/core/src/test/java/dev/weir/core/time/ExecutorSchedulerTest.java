package dev.weir.core.time;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.testkit.Await;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class ExecutorSchedulerTest {

  @Test
  void schedule_laterTaskFirst_runsInDueOrder() throws Exception {
    try (ExecutorScheduler scheduler = new ExecutorScheduler("order", 1)) {
      List<String> ran = new CopyOnWriteArrayList<>();
      CountDownLatch done = new CountDownLatch(2);
      scheduler.schedule(() -> record(ran, "late", done), Duration.ofMillis(300));
      scheduler.schedule(() -> record(ran, "soon", done), Duration.ofMillis(20));

      assertThat(done.await(10, TimeUnit.SECONDS)).isTrue();
      assertThat(ran).containsExactly("soon", "late");
    }
  }

  @Test
  void schedule_whileTheTimerWaitsForALaterTask_wakesItForTheEarlierOne() throws Exception {
    try (ExecutorScheduler scheduler = new ExecutorScheduler("wake", 1)) {
      CountDownLatch early = new CountDownLatch(1);
      scheduler.schedule(() -> {}, Duration.ofHours(1));
      Thread timer = thread("wake-timer");
      Await.until(
          Duration.ofSeconds(10),
          () -> timer.getState() == Thread.State.TIMED_WAITING,
          "the timer thread waiting for the task an hour away");
      scheduler.schedule(early::countDown, Duration.ZERO);

      assertThat(early.await(10, TimeUnit.SECONDS)).isTrue();
    }
  }

  @Test
  void cancel_beforeItIsDue_taskNeverRuns() throws Exception {
    try (ExecutorScheduler scheduler = new ExecutorScheduler("cancel", 1)) {
      AtomicInteger cancelledRuns = new AtomicInteger();
      CountDownLatch after = new CountDownLatch(1);
      scheduler.schedule(cancelledRuns::incrementAndGet, Duration.ofMillis(50)).cancel();
      scheduler.schedule(after::countDown, Duration.ofMillis(100));

      assertThat(after.await(10, TimeUnit.SECONDS)).isTrue();
      assertThat(cancelledRuns).hasValue(0);
    }
  }

  @Test
  void schedule_aTaskThrows_laterTasksStillRun() throws Exception {
    try (ExecutorScheduler scheduler = new ExecutorScheduler("throws", 1)) {
      CountDownLatch after = new CountDownLatch(1);
      scheduler.schedule(
          () -> {
            throw new IllegalStateException("expected by the test");
          },
          Duration.ZERO);
      scheduler.schedule(after::countDown, Duration.ofMillis(10));

      assertThat(after.await(10, TimeUnit.SECONDS)).isTrue();
    }
  }

  @Test
  void schedule_fromManyThreadsAtOnce_everyTaskRunsOnce() throws Exception {
    int threads = 4;
    int each = 20_000;
    try (ExecutorScheduler scheduler = new ExecutorScheduler("many", 2)) {
      AtomicInteger runs = new AtomicInteger();
      CountDownLatch all = new CountDownLatch(threads * each);
      List<Thread> producers = new CopyOnWriteArrayList<>();
      for (int t = 0; t < threads; t++) {
        Thread p =
            new Thread(
                () -> {
                  for (int i = 0; i < each; i++) {
                    scheduler.schedule(
                        () -> {
                          runs.incrementAndGet();
                          all.countDown();
                        },
                        Duration.ofNanos(i % 3 * 100_000L));
                  }
                });
        producers.add(p);
        p.start();
      }
      for (Thread p : producers) {
        p.join();
      }

      assertThat(all.await(30, TimeUnit.SECONDS)).isTrue();
      assertThat(runs).hasValue(threads * each);
    }
  }

  @Test
  void close_taskNotYetDue_neverRuns() throws Exception {
    AtomicInteger runs = new AtomicInteger();
    ExecutorScheduler scheduler = new ExecutorScheduler("closed", 1);
    Thread timer = thread("closed-timer");
    scheduler.schedule(runs::incrementAndGet, Duration.ofMillis(200));
    scheduler.close();
    timer.join(10_000);
    CountDownLatch probe = new CountDownLatch(1);
    try (ExecutorScheduler other = new ExecutorScheduler("probe", 1)) {
      other.schedule(probe::countDown, Duration.ofMillis(400));
      assertThat(probe.await(10, TimeUnit.SECONDS)).isTrue();
    }
    assertThat(timer.isAlive()).as("the timer thread ended").isFalse();
    assertThat(runs).hasValue(0);
    assertThatThrownBy(() -> scheduler.schedule(() -> {}, Duration.ZERO))
        .isInstanceOf(RejectedExecutionException.class);
  }

  private static Thread thread(String name) {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no thread " + name));
  }

  private static void record(List<String> ran, String name, CountDownLatch done) {
    ran.add(name);
    done.countDown();
  }
}
