package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.auth.PeerSecurity;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.IdlePeerHandler;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
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
