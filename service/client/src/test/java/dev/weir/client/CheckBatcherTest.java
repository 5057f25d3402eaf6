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
}
