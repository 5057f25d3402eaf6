package dev.weir.core.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class HttpWorkersTest {

  private final CountDownLatch release = new CountDownLatch(1);
  private final AtomicInteger dropped = new AtomicInteger();
  private final HttpWorkers workers =
      new HttpWorkers(new HttpSettings(1, 1), 1, 1, dropped::incrementAndGet);

  @AfterEach
  void stop() {
    release.countDown();
    workers.shutdown();
  }

  private Runnable blocking(CountDownLatch started) {
    return () -> {
      started.countDown();
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    };
  }

  private void saturateWorkers() throws InterruptedException {
    CountDownLatch started = new CountDownLatch(1);
    workers.execute(blocking(started));
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
    workers.execute(blocking(new CountDownLatch(1)));
    assertThat(workers.queued()).isEqualTo(1);
  }

  @Test
  void execute_workerFree_runsOnWorkerNotMarkedOverflow() throws Exception {
    CompletableFuture<Boolean> overflow = new CompletableFuture<>();
    CompletableFuture<Thread> thread = new CompletableFuture<>();

    workers.execute(
        () -> {
          thread.complete(Thread.currentThread());
          overflow.complete(HttpWorkers.isOverflow());
        });

    assertThat(overflow.get(10, TimeUnit.SECONDS)).isFalse();
    assertThat(thread.get(10, TimeUnit.SECONDS).getName()).startsWith("weir-http-");
    assertThat(thread.get().isDaemon()).isTrue();
  }

  @Test
  void execute_workersSaturated_runsMarkedOverflowOnRefusalThreadNotCaller() throws Exception {
    saturateWorkers();
    CompletableFuture<Boolean> overflow = new CompletableFuture<>();
    CompletableFuture<Thread> thread = new CompletableFuture<>();

    workers.execute(
        () -> {
          thread.complete(Thread.currentThread());
          overflow.complete(HttpWorkers.isOverflow());
        });

    assertThat(overflow.get(10, TimeUnit.SECONDS)).isTrue();
    assertThat(thread.get(10, TimeUnit.SECONDS)).isNotSameAs(Thread.currentThread());
    assertThat(thread.get().getName()).startsWith("weir-http-refusal-");
    assertThat(thread.get().isDaemon()).isTrue();
    assertThat(dropped).hasValue(0);
  }

  @Test
  void execute_workersAndRefusalThreadsSaturated_throwsAndReportsDroppedOnce() throws Exception {
    saturateWorkers();
    CountDownLatch refusing = new CountDownLatch(1);
    workers.execute(blocking(refusing));
    assertThat(refusing.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(workers.overflowRunning()).isEqualTo(1);
    workers.execute(blocking(new CountDownLatch(1)));

    assertThatThrownBy(() -> workers.execute(() -> {}))
        .isInstanceOf(RejectedExecutionException.class);
    assertThat(dropped).hasValue(1);
  }

  @Test
  void execute_afterShutdown_throwsWithoutReportingDropped() {
    workers.shutdown();

    assertThatThrownBy(() -> workers.execute(() -> {}))
        .isInstanceOf(RejectedExecutionException.class);
    assertThat(dropped).hasValue(0);
  }
}
