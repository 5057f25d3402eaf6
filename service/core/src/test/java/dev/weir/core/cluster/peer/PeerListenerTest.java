package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.auth.PeerSecurity;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.IdlePeerHandler;
import dev.weir.proto.gubernator.ForwardAnswers;
import dev.weir.proto.gubernator.ForwardBatch;
import dev.weir.proto.gubernator.PeersV1Grpc;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class PeerListenerTest {

  private final FakeClock clock = new FakeClock();
  private final Map<String, String> threads = new ConcurrentHashMap<>();
  private PeerListener listener;
  private PeerClient client;

  @AfterEach
  void stop() {
    if (client != null) {
      client.close();
    }
    if (listener != null) {
      listener.close();
    }
  }

  @Test
  void decisionsRunOnTheTransportAndMembershipNoticesOnThePeerPool() throws Exception {
    listener =
        PeerListener.start(
            new InetSocketAddress("127.0.0.1", 0),
            new PeersService(new ThreadRecordingHandler(), clock),
            PeerSecurity.insecure(),
            WeirMetrics.NOOP,
            4 << 20);
    client =
        new PeerClient(
            "127.0.0.1:" + listener.port(),
            NettyChannelBuilder.forAddress("127.0.0.1", listener.port()).usePlaintext().build(),
            new PeerClientSettings(1000, Duration.ofMillis(1), Duration.ofSeconds(5), false),
            new FakeScheduler(clock),
            clock);

    RateLimitResponse answer =
        client
            .forward(RateLimitRequest.builder("n", "k").hits(1).limit(5).duration(60_000).build())
            .get(5, TimeUnit.SECONDS);
    client.updatePeerGlobals(List.of(), Duration.ofSeconds(5)).get(5, TimeUnit.SECONDS);
    client.announce("127.0.0.1:1", false, Duration.ofSeconds(5)).get(5, TimeUnit.SECONDS);

    assertThat(answer.status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(threads.get("decideAsOwner")).doesNotStartWith("weir-peer-");
    assertThat(threads.get("applyGlobals")).doesNotStartWith("weir-peer-");
    assertThat(threads.get("announce")).startsWith("weir-peer-");
  }

  /**
   * Over loopback: an owner reads a sender's batches only while the sender reads their answers, so
   * its unsent answers stay within the flow-control windows; once the sender reads again, every
   * batch is answered, in order.
   */
  @Test
  void forwardBatches_senderStopsReadingAnswers_ownerReadsBoundedlyAndResumesWhenItReads()
      throws Exception {
    int batches = 200;
    int items = 1000;
    AtomicInteger itemsRead = new AtomicInteger();
    listener =
        PeerListener.start(
            new InetSocketAddress("127.0.0.1", 0),
            new PeersService(
                new IdlePeerHandler() {
                  @Override
                  public List<RateLimitResponse> decideAsOwner(List<RateLimitRequest> requests) {
                    itemsRead.addAndGet(requests.size());
                    return requests.stream()
                        .map(r -> RateLimitResponse.of(Status.UNDER_LIMIT, 5, 4, 0))
                        .toList();
                  }
                },
                clock),
            PeerSecurity.insecure(),
            WeirMetrics.NOOP,
            4 << 20);
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", listener.port())
            .usePlaintext()
            .flowControlWindow(64 * 1024)
            .build();
    try {
      List<Long> answered = new CopyOnWriteArrayList<>();
      ClientCall<ForwardBatch, ForwardAnswers> call =
          channel.newCall(PeersV1Grpc.getForwardBatchesMethod(), CallOptions.DEFAULT);
      call.start(
          new ClientCall.Listener<>() {
            @Override
            public void onMessage(ForwardAnswers a) {
              answered.add(a.getId());
            }
          },
          new Metadata());
      List<Long> ids = new ArrayList<>();
      for (long id = 0; id < batches; id++) {
        ForwardBatch.Builder batch = ForwardBatch.newBuilder().setId(id);
        for (int i = 0; i < items; i++) {
          batch.addRequests(
              RateLimitReq.newBuilder().setName("n").setUniqueKey("k" + i).setHits(1).setLimit(5));
        }
        call.sendMessage(batch.build());
        ids.add(id);
      }

      Await.until(Duration.ofSeconds(10), () -> itemsRead.get() > 0, "the owner reads a batch");
      int read = whenSettled(itemsRead);

      assertThat(read / items)
          .as("batches the owner read while its answers were not read (of %s sent)", batches)
          .isLessThan(batches / 4);

      call.request(batches);
      Await.until(
          Duration.ofSeconds(30), () -> answered.size() == batches, "every batch answered");
      assertThat(answered).isEqualTo(ids);
      assertThat(itemsRead.get()).isEqualTo(batches * items);
      call.cancel("done", null);
    } finally {
      channel.shutdownNow();
    }
  }

  // The value of count once it has not changed for half a second.
  private static int whenSettled(AtomicInteger count) throws InterruptedException {
    int last = -1;
    while (last != count.get()) {
      last = count.get();
      TimeUnit.MILLISECONDS.sleep(500);
    }
    return last;
  }

  private final class ThreadRecordingHandler extends IdlePeerHandler {
    private void record(String method) {
      threads.put(method, Thread.currentThread().getName());
    }

    @Override
    public List<RateLimitResponse> decideAsOwner(List<RateLimitRequest> requests) {
      record("decideAsOwner");
      return requests.stream().map(r -> RateLimitResponse.of(Status.UNDER_LIMIT, 5, 4, 0)).toList();
    }

    @Override
    public void applyGlobals(List<UpdatePeerGlobal> globals) {
      record("applyGlobals");
    }

    @Override
    public CompletableFuture<Void> announce(String address, boolean leaving) {
      record("announce");
      return CompletableFuture.completedFuture(null);
    }
  }
}
