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
