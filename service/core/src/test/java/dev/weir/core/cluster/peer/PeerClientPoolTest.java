package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.RecordingMetrics;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class PeerClientPoolTest {

  private final FakeClock clock = new FakeClock();
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final AtomicInteger itemsReceived = new AtomicInteger();
  private final List<Server> servers = new ArrayList<>();
  private final PeerClientPool pool = new PeerClientPool(this::inProcessClient);

  @AfterEach
  void stop() {
    pool.close();
    servers.forEach(Server::shutdownNow);
  }

  private final AtomicInteger created = new AtomicInteger();

  private PeerClient inProcessClient(String address) {
    created.incrementAndGet();
    PeerHandler handler =
        new PeerHandler() {
          @Override
          public List<RateLimitResponse> checkAsOwner(List<RateLimitRequest> requests) {
            itemsReceived.addAndGet(requests.size());
            return requests.stream()
                .map(r -> RateLimitResponse.of(Status.UNDER_LIMIT, r.limit(), 0, 0))
                .toList();
          }

          @Override
          public void applyGlobals(List<UpdatePeerGlobal> globals) {}

          @Override
          public int acceptBuckets(List<BucketSnapshot> buckets, String from) {
            return 0;
          }

          @Override
          public void announce(String a, boolean leaving) {}
        };
    try {
      String name = InProcessServerBuilder.generateName();
      servers.add(
          InProcessServerBuilder.forName(name)
              .directExecutor()
              .addService(new PeersService(handler))
              .build()
              .start());
      return new PeerClient(
          address,
          InProcessChannelBuilder.forName(name).directExecutor().build(),
          new PeerClientSettings(1000, Duration.ofMillis(1), Duration.ofSeconds(5), false),
          scheduler,
          clock);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private static RateLimitRequest req() {
    return RateLimitRequest.builder("n", "k").hits(1).limit(10).duration(60_000).build();
  }

  @Test
  void reportTo_batchForwarded_sizeAndOutcomeRecordedForClientsBeforeAndAfter() {
    RecordingMetrics metrics = new RecordingMetrics();
    PeerClient before = pool.get("a:1");
    pool.reportTo(metrics);
    PeerClient after = pool.get("b:1");

    CompletableFuture<RateLimitResponse> first = before.forward(req());
    CompletableFuture<RateLimitResponse> second = before.forward(req());
    after.forward(req());
    scheduler.advance(Duration.ofMillis(1));

    assertThat(first.join().status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(second.join().status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(metrics.events()).containsExactlyInAnyOrder("batch a:1 2 ok 0", "batch b:1 1 ok 0");
  }

  @Test
  void retain_peerLeftWithQueuedItems_itemsFailWithPeerExceptionAndAreNotSent() {
    CompletableFuture<RateLimitResponse> queued = pool.get("b:1").forward(req());

    pool.retain(List.of("a:1"));
    scheduler.advance(Duration.ofMillis(1));

    assertThat(itemsReceived.get()).isZero();
    assertThatThrownBy(queued::join)
        .hasCauseInstanceOf(PeerException.class)
        .hasMessageContaining("peer 'b:1' left the ring");
  }

  @Test
  void close_queuedItems_sentBeforeChannelsClose() {
    CompletableFuture<RateLimitResponse> queued = pool.get("b:1").forward(req());

    pool.close();

    assertThat(queued.join().status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(itemsReceived.get()).isEqualTo(1);
  }

  @Test
  void get_afterClose_refusedWithClearErrorAndNoClientCreated() {
    pool.close();

    assertThatThrownBy(() -> pool.get("b:1"))
        .isInstanceOf(PeerException.class)
        .hasMessageContaining("peer 'b:1'")
        .hasMessageContaining("shutting down");
    assertThat(pool.call("b:1", c -> c.forward(req()))).isCompletedExceptionally();
    pool.connect(List.of("c:1"));
    assertThat(created.get()).isZero();
    assertThat(pool.clients()).isEmpty();
  }
}
