package dev.weir.core.cluster.batch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.testkit.FakeClock;
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
  private final List<List<Integer>> sent = new ArrayList<>();
  private final List<CompletableFuture<List<String>>> calls = new ArrayList<>();
  private final List<Runnable> roundEnd = new ArrayList<>();

  /** A sender whose calls stay in flight until the test answers them. */
  private CompletableFuture<List<String>> held(List<Integer> batch) {
    CompletableFuture<List<String>> call = new CompletableFuture<>();
    synchronized (sent) {
      sent.add(List.copyOf(batch));
      calls.add(call);
    }
    return call;
  }

  private CompletableFuture<List<String>> echo(List<Integer> batch) {
    synchronized (sent) {
      sent.add(List.copyOf(batch));
    }
    return CompletableFuture.completedFuture(answers(batch));
  }

  private static List<String> answers(List<Integer> batch) {
    return batch.stream().map(i -> "r" + i).toList();
  }

  private void answer(int call) {
    calls.get(call).complete(answers(sent.get(call)));
  }

  /**
   * Returns a batcher on a thread with rounds: up to 8 calls in flight, a {@link #held} sender, and
   * each round's end task left in {@link #roundEnd} for the test to run.
   */
  private Batcher<Integer, String> withRounds(int batchLimit, int maxQueued) {
    return new Batcher<>(batchLimit, WAIT, 8, maxQueued, clock, roundEnd::add, this::held);
  }

  @Test
  void submitAll_oneRequestOfManyBatchesWhileIdle_noneRefusedAndEveryFreeCallTaken() {
    Batcher<Integer, String> b = new Batcher<>(10, WAIT, clock, this::held);
    List<Integer> request = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      request.add(i);
    }

    List<CompletableFuture<String>> futures = b.submitAll(request);

    assertThat(futures.stream().filter(CompletableFuture::isCompletedExceptionally))
        .as("one request to an idle destination fits whole")
        .isEmpty();
    assertThat(sent).as("a batch for each free call").hasSize(Batcher.MAX_IN_FLIGHT);
    assertThat(b.queued()).isEqualTo(100 - 10 * Batcher.MAX_IN_FLIGHT);
    for (int call = 0; call < Batcher.MAX_IN_FLIGHT + 2; call++) {
      answer(call);
    }
    assertThat(futures).allMatch(f -> f.isDone() && !f.isCompletedExceptionally());
    assertThat(futures.get(99).join()).isEqualTo("r99");
  }

  @Test
  void submitAll_firstBatchFailsWhileSent_batchesLeaveInOrderAndOnlyTheFailedOneFails() {
    AtomicInteger sends = new AtomicInteger();
    Batcher<Integer, String> b =
        new Batcher<>(
            10,
            WAIT,
            clock,
            batch -> {
              CompletableFuture<List<String>> call = held(batch);
              if (sends.getAndIncrement() == 0) {
                call.completeExceptionally(new IllegalStateException("peer down"));
              }
              return call;
            });
    List<Integer> request = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      request.add(i);
    }

    List<CompletableFuture<String>> futures = b.submitAll(request);

    assertThat(sent.stream().map(batch -> batch.get(0)))
        .as("each batch leaves after the one before it, the queue's tail last")
        .containsExactly(0, 10, 20, 30, 40, 50, 60, 70, 80);
    assertThat(futures.subList(0, 10)).allMatch(CompletableFuture::isCompletedExceptionally);
    assertThat(futures.subList(10, 100)).noneMatch(CompletableFuture::isDone);
    for (int call = 1; call < 10; call++) {
      answer(call);
    }
    assertThat(sent).hasSize(10);
    assertThat(sent.get(9)).startsWith(90);
    assertThat(futures.get(99).join()).isEqualTo("r99");
  }

  @Test
  void maxQueued_smallBatchLimit_holdsOneWholeRequestOfTheMostItems() {
    assertThat(Batcher.maxQueued(1)).isEqualTo(1000);
    assertThat(Batcher.maxQueued(1000)).isEqualTo(8000);
  }

  @Test
  void submit_nothingInFlight_sendsAtOnceAlone() {
    Batcher<Integer, String> b = new Batcher<>(1000, WAIT, clock, this::held);

    CompletableFuture<String> f1 = b.submit(1);

    assertThat(sent).containsExactly(List.of(1));
    assertThat(b.inFlight()).isEqualTo(1);
    answer(0);
    assertThat(f1.join()).isEqualTo("r1");
    assertThat(b.inFlight()).isZero();
  }

  @Test
  void submit_whileCallInFlight_queuesAndLeavesInOrderWhenTheCallCompletes() {
    Batcher<Integer, String> b = new Batcher<>(1000, WAIT, clock, this::held);
    CompletableFuture<String> f1 = b.submit(1);
    CompletableFuture<String> f2 = b.submit(2);
    CompletableFuture<String> f3 = b.submit(3);
    assertThat(sent).containsExactly(List.of(1));
    assertThat(b.queued()).isEqualTo(2);

    answer(0);

    assertThat(f1.join()).isEqualTo("r1");
    assertThat(sent).containsExactly(List.of(1), List.of(2, 3));
    assertThat(f2).isNotDone();
    answer(1);
    assertThat(List.of(f2.join(), f3.join())).containsExactly("r2", "r3");
  }

  @Test
  void submit_limitReachedWhileInFlight_sendsTheFullBatchAtOnce() {
    Batcher<Integer, String> b = new Batcher<>(3, WAIT, clock, this::held);
    b.submit(1);
    b.submit(2);
    b.submit(3);
    assertThat(sent).containsExactly(List.of(1));

    b.submit(4);

    assertThat(sent).containsExactly(List.of(1), List.of(2, 3, 4));
    assertThat(b.inFlight()).isEqualTo(2);
  }

  @Test
  void submit_lastCallSentBatchWaitAgo_opensAnotherCall() {
    Batcher<Integer, String> b = new Batcher<>(1000, WAIT, clock, this::held);
    b.submit(1);
    clock.advance(WAIT.minusNanos(1));
    b.submit(2);
    assertThat(sent).containsExactly(List.of(1));

    clock.advance(Duration.ofNanos(1));
    b.submit(3);

    assertThat(sent).containsExactly(List.of(1), List.of(2, 3));
  }

  @Test
  void submit_maxInFlightReached_onlyQueuesUntilACallCompletes() {
    Batcher<Integer, String> b =
        new Batcher<>(2, Duration.ZERO, 2, 100, clock, RoundEnd.NONE, this::held);
    b.submit(1);
    b.submit(2);
    b.submit(3);
    b.submit(4);
    b.submit(5);
    assertThat(sent).containsExactly(List.of(1), List.of(2));
    assertThat(b.queued()).isEqualTo(3);

    answer(0);

    assertThat(sent).containsExactly(List.of(1), List.of(2), List.of(3, 4));
    assertThat(b.queued()).isEqualTo(1);
  }

  @Test
  void submit_queueFull_failsAtOnceNamingTheBoundAndLaterItemsGoAfterTheQueueDrains() {
    Batcher<Integer, String> b = new Batcher<>(2, WAIT, 1, 3, clock, RoundEnd.NONE, this::held);
    b.submit(1);
    b.submit(2);
    b.submit(3);
    b.submit(4);
    assertThat(b.queued()).isEqualTo(3);

    CompletableFuture<String> refused = b.submit(5);

    assertThatThrownBy(refused::join)
        .hasCauseInstanceOf(Batcher.QueueFullException.class)
        .hasMessageContaining("3 items (the most that may wait) already wait")
        .hasMessageContaining("behind 1 calls in flight");
    answer(0);
    assertThat(sent).containsExactly(List.of(1), List.of(2, 3));
    CompletableFuture<String> later = b.submit(6);
    assertThat(later).isNotDone();
    assertThat(b.queued()).isEqualTo(2);
  }

  @Test
  void submit_defaultQueueBoundWithFewerCallsInFlight_refusalStillNamesTheBound() {
    Batcher<Integer, String> b =
        new Batcher<>(2, WAIT, 1, Batcher.maxQueued(2), clock, RoundEnd.NONE, this::held);
    List<CompletableFuture<String>> futures = new ArrayList<>();
    for (int i = 0; i < 2 + 1000 + 1; i++) {
      futures.add(b.submit(i));
    }

    assertThat(b.queued()).isEqualTo(1000);
    assertThatThrownBy(futures.get(futures.size() - 1)::join)
        .hasCauseInstanceOf(Batcher.QueueFullException.class)
        .hasMessageContaining(
            "1000 items (the most that may wait: 8 × WEIR_BATCH_LIMIT (2), and never fewer than"
                + " 1000) already wait");
  }

  @Test
  void submitAll_defaultBoundFull_refusalNamesTheSettingThatSetsTheBoundAndItsValue() {
    Batcher<Integer, String> b = new Batcher<>(2, WAIT, clock, this::held);
    List<Integer> request = new ArrayList<>();
    for (int i = 0; i < 8 * 2 + 1000 + 1; i++) {
      request.add(i);
    }

    List<CompletableFuture<String>> futures = b.submitAll(request);

    assertThat(sent).hasSize(8);
    assertThat(b.queued()).isEqualTo(1000);
    assertThatThrownBy(futures.get(request.size() - 1)::join)
        .hasCauseInstanceOf(Batcher.QueueFullException.class)
        .hasMessageContaining("1000 items (the most that may wait:")
        .hasMessageContaining("8 × WEIR_BATCH_LIMIT (2), and never fewer than 1000)");
    assertThat(futures.get(request.size() - 2)).isNotDone();
  }

  @Test
  void callCompletes_queueLongerThanLimit_sendsLimitThenTheRestAtTheNextCompletion() {
    Batcher<Integer, String> b = new Batcher<>(2, WAIT, 1, 100, clock, RoundEnd.NONE, this::held);
    for (int i = 1; i <= 6; i++) {
      b.submit(i);
    }
    assertThat(sent).containsExactly(List.of(1));

    answer(0);
    answer(1);
    answer(2);

    assertThat(sent).containsExactly(List.of(1), List.of(2, 3), List.of(4, 5), List.of(6));
  }

  @Test
  void send_failsMidStream_onlyThatBatchFailsAndTheNextOneIsStillSent() {
    Batcher<Integer, String> b = new Batcher<>(1000, WAIT, clock, this::held);
    CompletableFuture<String> f1 = b.submit(1);
    CompletableFuture<String> f2 = b.submit(2);
    CompletableFuture<String> f3 = b.submit(3);

    calls.get(0).completeExceptionally(new IllegalStateException("peer down"));

    assertThatThrownBy(f1::join).hasMessageContaining("peer down");
    assertThat(sent).containsExactly(List.of(1), List.of(2, 3));
    answer(1);
    assertThat(List.of(f2.join(), f3.join())).containsExactly("r2", "r3");
  }

  @Test
  void send_wrongAnswerCount_everyItemOfTheBatchFails() {
    Batcher<Integer, String> b = new Batcher<>(1000, WAIT, clock, this::held);
    b.submit(1);
    CompletableFuture<String> f2 = b.submit(2);
    CompletableFuture<String> f3 = b.submit(3);
    answer(0);

    calls.get(1).complete(List.of("x"));

    assertThatThrownBy(f2::get)
        .isInstanceOf(ExecutionException.class)
        .hasMessageContaining("expected 2 answers, got 1");
    assertThat(f3).isCompletedExceptionally();
  }

  @Test
  void send_noAnswerListOrNoFuture_everyItemOfTheBatchFailsAndTheNextBatchIsSent() {
    Batcher<Integer, String> nullAnswers =
        new Batcher<>(1000, WAIT, clock, batch -> CompletableFuture.completedFuture(null));
    Batcher<Integer, String> nullFuture = new Batcher<>(1000, WAIT, clock, batch -> null);

    CompletableFuture<String> first = nullAnswers.submit(1);
    CompletableFuture<String> second = nullFuture.submit(1);

    assertThatThrownBy(first::get).hasMessageContaining("expected 1 answers, got none");
    assertThatThrownBy(second::get).hasMessageContaining("sender returned no call");
    assertThat(nullAnswers.submit(2)).as("no call left in flight").isCompletedExceptionally();
  }

  @Test
  void senderThrows_everyItemFailsInsteadOfHangingAndTheCallIsNotLeftInFlight() {
    Batcher<Integer, String> b =
        new Batcher<>(
            1,
            WAIT,
            clock,
            batch -> {
              throw new IllegalArgumentException("boom");
            });
    assertThatThrownBy(b.submit(1)::join).hasMessageContaining("boom");
    assertThat(b.inFlight()).isZero();
  }

  @Test
  void close_itemsQueued_sendsThemAtOnceAndRefusesNewOnes() {
    Batcher<Integer, String> b = new Batcher<>(1000, WAIT, clock, this::held);
    b.submit(1);
    CompletableFuture<String> f2 = b.submit(2);

    b.close();

    assertThat(sent).containsExactly(List.of(1), List.of(2));
    answer(1);
    assertThat(f2.join()).isEqualTo("r2");
    CompletableFuture<String> late = b.submit(3);
    assertThatThrownBy(late::join).hasMessageContaining("batcher is closed");
  }

  @Test
  void abandon_queuedItems_failedWithReasonAndNeverSent() {
    Batcher<Integer, String> b = new Batcher<>(1000, WAIT, clock, this::held);
    b.submit(1);
    CompletableFuture<String> f2 = b.submit(2);
    IllegalStateException reason = new IllegalStateException("peer left");

    b.abandon(reason);
    answer(0);

    assertThat(sent).containsExactly(List.of(1));
    assertThatThrownBy(f2::join).hasCause(reason);
    assertThat(b.submit(3)).isCompletedExceptionally();
    assertThat(sent).containsExactly(List.of(1));
  }

  @Test
  void submit_manyThreads_everyCallerCompletedExactlyOnceWithItsOwnAnswer() throws Exception {
    AtomicInteger sentItems = new AtomicInteger();
    ExecutorService answerer = Executors.newSingleThreadExecutor();
    int threads = 4;
    int perThread = 250;
    Batcher<Integer, String> b =
        new Batcher<>(
            7,
            WAIT,
            Batcher.MAX_IN_FLIGHT,
            threads * perThread, // room for every item: none is refused
            clock,
            RoundEnd.NONE,
            batch -> {
              sentItems.addAndGet(batch.size());
              return CompletableFuture.supplyAsync(() -> answers(batch), answerer);
            });
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch start = new CountDownLatch(1);
    List<List<CompletableFuture<String>>> results = new ArrayList<>();
    AtomicInteger completions = new AtomicInteger();
    for (int t = 0; t < threads; t++) {
      int base = t * perThread;
      List<CompletableFuture<String>> mine = new ArrayList<>();
      results.add(mine);
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
    for (int t = 0; t < threads; t++) {
      for (int i = 0; i < perThread; i++) {
        assertThat(results.get(t).get(i).get(10, TimeUnit.SECONDS))
            .isEqualTo("r" + (t * perThread + i));
      }
    }
    answerer.shutdown();
    assertThat(sentItems.get()).isEqualTo(threads * perThread);
    assertThat(completions.get()).isEqualTo(threads * perThread);
    assertThat(b.inFlight()).isZero();
    assertThat(b.queued()).isZero();
  }

  @Test
  void submit_nothingInFlightOnAThreadWithRounds_leavesAtTheRoundEndWithTheRoundsOtherItems() {
    Batcher<Integer, String> b = withRounds(1000, 1000);

    CompletableFuture<String> f1 = b.submit(1);
    b.submit(2);
    b.submit(3);

    assertThat(sent).isEmpty();
    assertThat(b.queued()).isEqualTo(3);
    assertThat(roundEnd).hasSize(1);
    roundEnd.get(0).run();
    assertThat(sent).containsExactly(List.of(1, 2, 3));
    answer(0);
    assertThat(f1).isCompletedWithValue("r1");
  }

  @Test
  void submit_roundFillsABatch_theFullBatchLeavesAtOnceAndTheRestAtTheRoundEnd() {
    Batcher<Integer, String> b = withRounds(2, 100);

    b.submit(1);
    b.submit(2);
    b.submit(3);

    assertThat(sent).containsExactly(List.of(1, 2));
    roundEnd.forEach(Runnable::run);
    assertThat(sent).containsExactly(List.of(1, 2), List.of(3));
  }

  @Test
  void callCompletesOnAThreadWithRounds_queueLeavesAtTheRoundEndWithTheRoundsLaterItems() {
    Batcher<Integer, String> b = withRounds(1000, 1000);
    b.submit(1);
    roundEnd.remove(0).run();
    CompletableFuture<String> f2 = b.submit(2);

    answer(0);

    assertThat(sent).containsExactly(List.of(1));
    assertThat(roundEnd).hasSize(1);
    CompletableFuture<String> f3 = b.submit(3);
    roundEnd.remove(0).run();
    assertThat(sent).containsExactly(List.of(1), List.of(2, 3));
    answer(1);
    assertThat(List.of(f2.join(), f3.join())).containsExactly("r2", "r3");
  }

  @Test
  void callCompletes_roundEndAlreadyPending_leavesTheQueueToThatRoundEnd() {
    Batcher<Integer, String> b = withRounds(2, 100);
    b.submit(1);
    b.submit(2);
    b.submit(3);

    answer(0);

    assertThat(sent).containsExactly(List.of(1, 2));
    assertThat(roundEnd).hasSize(1);
    roundEnd.remove(0).run();
    assertThat(sent).containsExactly(List.of(1, 2), List.of(3));
    assertThat(b.inFlight()).isEqualTo(1);
  }

  @Test
  void roundEnd_severalCallsCompletedInTheRound_sendsABatchForEachFreeCallUntilTheQueueIsEmpty() {
    Batcher<Integer, String> b = withRounds(2, 100);
    b.submit(1);
    roundEnd.remove(0).run();
    for (int i = 2; i <= 15; i++) {
      b.submit(i);
    }
    assertThat(b.inFlight()).as("8 calls out").isEqualTo(8);
    for (int i = 16; i <= 21; i++) {
      b.submit(i);
    }

    answer(0);
    answer(1);
    answer(2);
    assertThat(roundEnd).as("the three answers read in one round").hasSize(1);
    roundEnd.remove(0).run();

    assertThat(sent.subList(8, sent.size()))
        .containsExactly(List.of(16, 17), List.of(18, 19), List.of(20, 21));
    assertThat(b.queued()).isZero();
    assertThat(b.inFlight()).isEqualTo(8);
  }

  @Test
  void roundEnd_maxInFlightReached_leavesTheQueueToTheNextCompletion() {
    Batcher<Integer, String> b =
        new Batcher<>(100, Duration.ZERO, 1, 100, clock, roundEnd::add, this::held);
    b.submit(1);
    roundEnd.remove(0).run();
    b.submit(2);
    b.flush();
    b.submit(3);
    answer(0);

    roundEnd.remove(0).run();

    assertThat(sent).containsExactly(List.of(1), List.of(2));
    assertThat(b.queued()).isEqualTo(1);
    answer(1);
    roundEnd.remove(0).run();
    assertThat(sent).containsExactly(List.of(1), List.of(2), List.of(3));
  }

  @Test
  void constructor_boundsOutOfRange_rejectedNamingTheValue() {
    assertThatThrownBy(() -> new Batcher<Integer, String>(1001, WAIT, clock, this::echo))
        .hasMessageContaining("batchLimit must be within 1..1000, got 1001");
    assertThatThrownBy(
            () -> new Batcher<Integer, String>(10, WAIT, 0, 10, clock, RoundEnd.NONE, this::echo))
        .hasMessageContaining("maxInFlight must be at least 1, got 0");
    assertThatThrownBy(
            () -> new Batcher<Integer, String>(10, WAIT, 1, 9, clock, RoundEnd.NONE, this::echo))
        .hasMessageContaining("maxQueued must be at least batchLimit (10), got 9");
  }

  @Test
  void callFails_laterBatchesFailAsTheyAreSent_everyItemCompletesWithoutDeepRecursion()
      throws Exception {
    AtomicInteger sends = new AtomicInteger();
    CompletableFuture<List<String>> first = new CompletableFuture<>();
    Batcher<Integer, String> b =
        new Batcher<>(
            1,
            WAIT,
            1,
            10_000,
            clock,
            RoundEnd.NONE,
            batch ->
                sends.getAndIncrement() == 0
                    ? first
                    : CompletableFuture.failedFuture(new IllegalStateException("peer down")));
    List<CompletableFuture<String>> futures = new ArrayList<>();
    for (int i = 0; i < 10_000; i++) {
      futures.add(b.submit(i));
    }
    assertThat(b.queued()).isEqualTo(9_999);

    // A small stack, as a transport thread may have: 10,000 batches failing as they are sent one
    // after another must not take a stack frame each.
    Thread failer =
        new Thread(
            null,
            () -> first.completeExceptionally(new IllegalStateException("peer down")),
            "small-stack",
            256 * 1024);
    failer.start();
    failer.join(TimeUnit.SECONDS.toMillis(10));

    assertThat(futures).allMatch(CompletableFuture::isCompletedExceptionally);
    assertThat(sends).hasValue(10_000);
    assertThat(b.inFlight()).isZero();
    assertThat(b.queued()).isZero();
  }

  /** Runs {@code task} on a thread of its own (another transport thread) and waits for it. */
  private static void onAnotherThread(Runnable task) throws InterruptedException {
    Thread other = new Thread(task, "another-thread");
    other.start();
    other.join(TimeUnit.SECONDS.toMillis(10));
  }

  @Test
  void submit_fromAnotherThreadWhileARoundEndIsPending_leavesAtOnceWithTheQueue() throws Exception {
    Batcher<Integer, String> b = withRounds(1000, 1000);
    b.submit(1);
    assertThat(roundEnd).as("this thread's round end holds item 1").hasSize(1);

    onAnotherThread(() -> b.submit(2));

    assertThat(sent).as("not held for another thread's round").containsExactly(List.of(1, 2));
    roundEnd.remove(0).run();
    assertThat(sent).containsExactly(List.of(1, 2));
    assertThat(b.inFlight()).isEqualTo(1);
  }

  @Test
  void callCompletesOnAnotherThreadWhileARoundEndIsPending_queueLeavesAtOnce() throws Exception {
    Batcher<Integer, String> b = withRounds(1000, 1000);
    b.submit(1);
    roundEnd.remove(0).run();
    clock.advance(WAIT);
    b.submit(2); // batchWait after the first call: a second call
    b.submit(3);
    answer(0); // completes on this thread, which defers the queue to its round end
    assertThat(roundEnd).hasSize(1);

    onAnotherThread(() -> answer(1));

    assertThat(sent).containsExactly(List.of(1), List.of(2), List.of(3));
    roundEnd.remove(0).run();
    assertThat(sent).hasSize(3);
  }

  @Test
  void submit_onTheThreadWhoseRoundEndIsPending_stillWaitsForItsRoundEnd() {
    Batcher<Integer, String> b = withRounds(1000, 1000);
    b.submit(1);
    clock.advance(WAIT);

    b.submit(2);

    assertThat(sent).isEmpty();
    roundEnd.remove(0).run();
    assertThat(sent).containsExactly(List.of(1, 2));
  }
}
