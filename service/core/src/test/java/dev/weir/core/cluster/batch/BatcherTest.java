package dev.weir.core.cluster.batch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.time.Scheduler;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class BatcherTest {

  private static final Duration WAIT = Duration.ofNanos(500_000);

  private final FakeClock clock = new FakeClock();
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final List<List<Integer>> sent = new ArrayList<>();

  private CompletableFuture<List<String>> echo(List<Integer> batch) {
    synchronized (sent) {
      sent.add(List.copyOf(batch));
    }
    return CompletableFuture.completedFuture(batch.stream().map(i -> "r" + i).toList());
  }

  @Test
  void submit_limitReached_sendsAtOnceWithoutTimer() {
    Batcher<Integer, String> b = new Batcher<>(3, WAIT, scheduler, this::echo);
    CompletableFuture<String> f1 = b.submit(1);
    CompletableFuture<String> f2 = b.submit(2);
    assertThat(sent).isEmpty();
    CompletableFuture<String> f3 = b.submit(3);
    assertThat(sent).containsExactly(List.of(1, 2, 3));
    assertThat(List.of(f1.join(), f2.join(), f3.join())).containsExactly("r1", "r2", "r3");
    assertThat(scheduler.pending()).isZero();
  }

  @Test
  void abandon_queuedItems_failedWithReasonAndNeverSent() {
    Batcher<Integer, String> b = new Batcher<>(1000, WAIT, scheduler, this::echo);
    CompletableFuture<String> f1 = b.submit(1);
    CompletableFuture<String> f2 = b.submit(2);
    IllegalStateException reason = new IllegalStateException("peer left");

    b.abandon(reason);
    scheduler.advance(WAIT);

    assertThat(sent).isEmpty();
    assertThat(f1).isCompletedExceptionally();
    assertThat(f2).isCompletedExceptionally();
    assertThatThrownBy(f1::join).hasCause(reason);
    assertThat(b.submit(3)).isCompletedExceptionally();
    assertThat(sent).isEmpty();
  }

  @Test
  void submit_schedulerRefusesTimer_itemFailsAndLaterItemsStillGetATimer() {
    AtomicInteger refusals = new AtomicInteger(1);
    Scheduler refusingOnce =
        (task, delay) -> {
          if (refusals.getAndDecrement() > 0) {
            throw new java.util.concurrent.RejectedExecutionException("scheduler shut down");
          }
          return scheduler.schedule(task, delay);
        };
    Batcher<Integer, String> b = new Batcher<>(1000, WAIT, refusingOnce, this::echo);

    CompletableFuture<String> refused = b.submit(1);
    CompletableFuture<String> later = b.submit(2);
    scheduler.advance(WAIT);

    assertThat(refused).isCompletedExceptionally();
    assertThat(b.queued()).isZero();
    assertThat(sent).containsExactly(List.of(2));
    assertThat(later.join()).isEqualTo("r2");
  }

  @Test
  void submit_waitElapses_sendsPartialBatch() {
    Batcher<Integer, String> b = new Batcher<>(1000, WAIT, scheduler, this::echo);
    CompletableFuture<String> f1 = b.submit(1);
    scheduler.advance(Duration.ofNanos(200_000));
    CompletableFuture<String> f2 = b.submit(2);
    scheduler.advance(Duration.ofNanos(299_999));
    assertThat(sent).isEmpty();
    assertThat(f1).isNotDone();
    scheduler.advance(Duration.ofNanos(1));
    assertThat(sent).containsExactly(List.of(1, 2));
    assertThat(f1.join()).isEqualTo("r1");
    assertThat(f2.join()).isEqualTo("r2");
  }

  @Test
  void submit_afterSizeFlush_nextBatchGetsItsOwnFullWait() {
    Batcher<Integer, String> b = new Batcher<>(2, WAIT, scheduler, this::echo);
    b.submit(1);
    b.submit(2);
    scheduler.advance(Duration.ofNanos(400_000));
    b.submit(3);
    scheduler.advance(Duration.ofNanos(400_000));
    assertThat(sent).containsExactly(List.of(1, 2));
    scheduler.advance(Duration.ofNanos(100_000));
    assertThat(sent).containsExactly(List.of(1, 2), List.of(3));
  }

  @Test
  void staleTimer_firesAfterItsBatchWentOutBySize_nextBatchStillWaitsItsFullWait() {
    Scheduler cancelTooLate =
        (task, delay) -> {
          scheduler.schedule(task, delay);
          return () -> {};
        };
    Batcher<Integer, String> b = new Batcher<>(2, WAIT, cancelTooLate, this::echo);
    b.submit(1);
    b.submit(2);
    scheduler.advance(Duration.ofNanos(400_000));
    b.submit(3);

    scheduler.advance(Duration.ofNanos(100_000));
    assertThat(sent).as("the first batch's timer fired").containsExactly(List.of(1, 2));
    scheduler.advance(Duration.ofNanos(400_000));
    assertThat(sent).containsExactly(List.of(1, 2), List.of(3));
  }

  @Test
  void close_itemsQueued_sendsThemAndRefusesNewOnes() {
    Batcher<Integer, String> b = new Batcher<>(1000, WAIT, scheduler, this::echo);
    CompletableFuture<String> f1 = b.submit(1);
    b.close();
    assertThat(sent).containsExactly(List.of(1));
    assertThat(f1.join()).isEqualTo("r1");
    assertThat(scheduler.pending()).isZero();
    CompletableFuture<String> late = b.submit(2);
    assertThatThrownBy(late::join).hasMessageContaining("batcher is closed");
  }

  @Test
  void send_fails_everyItemOfThatBatchFails() {
    AtomicInteger calls = new AtomicInteger();
    Batcher<Integer, String> b =
        new Batcher<>(
            2,
            WAIT,
            scheduler,
            batch ->
                calls.incrementAndGet() == 1
                    ? CompletableFuture.failedFuture(new IllegalStateException("peer down"))
                    : CompletableFuture.completedFuture(batch.stream().map(i -> "r" + i).toList()));
    CompletableFuture<String> f1 = b.submit(1);
    CompletableFuture<String> f2 = b.submit(2);
    CompletableFuture<String> f3 = b.submit(3);
    scheduler.advance(WAIT);
    assertThat(f1).isCompletedExceptionally();
    assertThat(f2).isCompletedExceptionally();
    assertThat(f3.join()).isEqualTo("r3");
  }

  @Test
  void send_wrongAnswerCount_everyItemFails() {
    Batcher<Integer, String> b =
        new Batcher<>(2, WAIT, scheduler, batch -> CompletableFuture.completedFuture(List.of("x")));
    CompletableFuture<String> f1 = b.submit(1);
    CompletableFuture<String> f2 = b.submit(2);
    assertThatThrownBy(f1::get)
        .isInstanceOf(ExecutionException.class)
        .hasMessageContaining("expected 2 answers, got 1");
    assertThat(f2).isCompletedExceptionally();
  }

  @Test
  void senderThrows_everyItemFailsInsteadOfHanging() {
    Batcher<Integer, String> b =
        new Batcher<>(
            1,
            WAIT,
            scheduler,
            batch -> {
              throw new IllegalArgumentException("boom");
            });
    assertThat(b.submit(1)).isCompletedExceptionally();
  }

  @Test
  void submit_manyThreads_everyCallerCompletedExactlyOnceWithItsOwnAnswer() throws Exception {
    AtomicInteger sentItems = new AtomicInteger();
    Batcher<Integer, String> b =
        new Batcher<>(
            7,
            WAIT,
            scheduler,
            batch -> {
              sentItems.addAndGet(batch.size());
              return CompletableFuture.completedFuture(batch.stream().map(i -> "r" + i).toList());
            });
    int threads = 4;
    int perThread = 250;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch start = new CountDownLatch(1);
    List<CompletableFuture<String>>[] results = newResults(threads);
    AtomicInteger completions = new AtomicInteger();
    for (int t = 0; t < threads; t++) {
      int base = t * perThread;
      List<CompletableFuture<String>> mine = results[t];
      pool.submit(
          () -> {
            start.await();
            for (int i = 0; i < perThread; i++) {
              CompletableFuture<String> f = b.submit(base + i);
              f.whenComplete((v, e) -> completions.incrementAndGet());
              mine.add(f);
            }
            return null;
          });
    }
    start.countDown();
    pool.shutdown();
    assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
    b.close();
    for (int t = 0; t < threads; t++) {
      for (int i = 0; i < perThread; i++) {
        assertThat(results[t].get(i).join()).isEqualTo("r" + (t * perThread + i));
      }
    }
    assertThat(sentItems.get()).isEqualTo(threads * perThread);
    assertThat(completions.get()).isEqualTo(threads * perThread);
  }

  @Test
  void constructor_limitAbove1000_rejected() {
    assertThatThrownBy(() -> new Batcher<Integer, String>(1001, WAIT, scheduler, this::echo))
        .hasMessageContaining("batchLimit must be within 1..1000, got 1001");
  }

  @SuppressWarnings("unchecked")
  private static List<CompletableFuture<String>>[] newResults(int n) {
    List<CompletableFuture<String>>[] out = new List[n];
    for (int i = 0; i < n; i++) {
      out[i] = new ArrayList<>();
    }
    return out;
  }
}
