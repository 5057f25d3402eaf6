package dev.weir.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class CheckBatcherTest {

  private static CheckBatcher.Pending pending(String key) {
    return new CheckBatcher.Pending(
        RateLimitReq.newBuilder().setName("n").setUniqueKey(key).build(),
        new CompletableFuture<>());
  }

  /** The cap on a batch's bytes in the tests of it, small enough that a few checks reach it. */
  private static final int CAP = 100;

  /**
   * Returns a check that takes {@code bytes} in a {@code GetRateLimitsReq}: a tag and a length byte
   * around its name ({@code n}, 3 bytes) and a key of {@code bytes - 7} characters (2 + the key).
   */
  private static CheckBatcher.Pending ofBytes(int bytes, String prefix) {
    String key = prefix + "k".repeat(bytes - 7 - prefix.length());
    CheckBatcher.Pending item = pending(key);
    assertThat(com.google.protobuf.CodedOutputStream.computeMessageSize(1, item.request()))
        .isEqualTo(bytes);
    return item;
  }

  /** Returns a batcher with a 1 ms window and {@link #CAP} recording each call's key prefixes. */
  private static CheckBatcher cappedBatcher(
      FakeBatchScheduler scheduler, List<List<String>> calls) {
    return new CheckBatcher(
        Duration.ofMillis(1),
        WeirClient.MAX_BATCH,
        CAP,
        scheduler,
        requests -> {
          calls.add(requests.stream().map(r -> r.getUniqueKey().substring(0, 2)).toList());
          return CompletableFuture.completedFuture(
              java.util.Collections.nCopies(requests.size(), RateLimitResp.getDefaultInstance()));
        });
  }

  @Test
  void add_checkBringingTheBatchToExactlyTheCap_sendsItAtOnceWithoutWaitingForTheWindow() {
    FakeBatchScheduler scheduler = new FakeBatchScheduler();
    List<List<String>> calls = new java.util.ArrayList<>();
    CheckBatcher batcher = cappedBatcher(scheduler, calls);

    batcher.add(List.of(ofBytes(40, "a1")));
    batcher.add(List.of(ofBytes(60, "a2")));
    batcher.add(List.of(ofBytes(CAP, "b1")));

    assertThat(calls).containsExactly(List.of("a1", "a2"), List.of("b1"));
    assertThat(scheduler.waiting()).as("no window left open").isEmpty();
  }

  @Test
  void add_smallChecksAddingUpPastTheCap_splitIntoCallsEachWithinIt() {
    FakeBatchScheduler scheduler = new FakeBatchScheduler();
    List<List<String>> calls = new java.util.ArrayList<>();
    CheckBatcher batcher = cappedBatcher(scheduler, calls);
    List<CheckBatcher.Pending> items =
        List.of(
            ofBytes(30, "a1"),
            ofBytes(30, "a2"),
            ofBytes(30, "a3"),
            ofBytes(30, "b1"),
            ofBytes(30, "b2"),
            ofBytes(30, "b3"),
            ofBytes(30, "c1"));

    batcher.add(items);

    assertThat(calls)
        .as("a fourth check of 30 bytes would take a batch of 90 over 100: it starts the next")
        .containsExactly(List.of("a1", "a2", "a3"), List.of("b1", "b2", "b3"));
    scheduler.runDue();
    assertThat(calls).hasSize(3).last().isEqualTo(List.of("c1"));
    assertThat(items).allSatisfy(item -> assertThat(item.response()).isCompleted());
  }

  @Test
  void add_checkLargerThanTheCap_goesAloneAndTheChecksAroundItInOtherCalls() {
    FakeBatchScheduler scheduler = new FakeBatchScheduler();
    List<List<String>> calls = new java.util.ArrayList<>();
    CheckBatcher batcher = cappedBatcher(scheduler, calls);

    batcher.add(List.of(ofBytes(30, "a1"), ofBytes(CAP + 1, "b1"), ofBytes(30, "c1")));

    assertThat(calls).containsExactly(List.of("a1"), List.of("b1"));
    scheduler.runDue();
    assertThat(calls).containsExactly(List.of("a1"), List.of("b1"), List.of("c1"));
  }

  @Test
  void send_senderAnswersFewerResponses_everyFutureFailsInsteadOfWaitingForever() {
    CheckBatcher batcher =
        new CheckBatcher(
            Duration.ZERO,
            10,
            WeirClient.DEFAULT_MAX_BATCH_BYTES,
            new FakeBatchScheduler(),
            requests ->
                CompletableFuture.completedFuture(List.of(RateLimitResp.getDefaultInstance())));
    CheckBatcher.Pending a = pending("a");
    CheckBatcher.Pending b = pending("b");

    batcher.add(List.of(a, b));

    assertThat(a.response()).isCompletedExceptionally();
    assertThat(b.response())
        .failsWithin(Duration.ZERO)
        .withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .withCauseInstanceOf(WeirException.class)
        .withMessageContaining("answered 1 responses to 2 checks");
  }

  @Test
  void close_sendsWhatIsQueued_andLaterItemsAtOnceWithoutATimer() {
    FakeBatchScheduler scheduler = new FakeBatchScheduler();
    List<Integer> sent = new java.util.ArrayList<>();
    CheckBatcher batcher =
        new CheckBatcher(
            Duration.ofMillis(1),
            10,
            WeirClient.DEFAULT_MAX_BATCH_BYTES,
            scheduler,
            requests -> {
              sent.add(requests.size());
              return CompletableFuture.completedFuture(
                  java.util.Collections.nCopies(requests.size(), RateLimitResp.getDefaultInstance()));
            });
    batcher.add(List.of(pending("a"), pending("b")));

    batcher.close();
    CheckBatcher.Pending late = pending("c");
    batcher.add(List.of(late));

    assertThat(sent).as("the queue at the close, then the late check alone").containsExactly(2, 1);
    assertThat(late.response()).isCompleted();
    scheduler.runDue();
    assertThat(sent).as("the window's timer sends nothing more").containsExactly(2, 1);
  }
}
