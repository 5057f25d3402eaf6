package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.IdlePeerHandler;
import dev.weir.core.testkit.InProcessPeers;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.RateLimitResp;
import io.grpc.netty.shaded.io.netty.channel.DefaultEventLoop;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class RelayForwarderTest {

  private final FakeClock clock = new FakeClock();
  // Items wait for the batch window, which the fake clock never reaches.
  private final PeerClientSettings settings =
      new PeerClientSettings(1000, Duration.ofSeconds(1), Duration.ofSeconds(5), false);
  private final InProcessPeers peers = new InProcessPeers(settings, clock);
  private final PeerClientPool pool = new PeerClientPool(peers::client, clock);
  private final List<Integer> relayed = new CopyOnWriteArrayList<>();
  private final PeerClientPool relaying =
      new PeerClientPool(
          address -> peers.client(address, new Voucher(), (task, delay) -> () -> {}), clock);
  private final DefaultEventLoop loop = new DefaultEventLoop();

  @AfterEach
  void stop() {
    loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    relaying.close();
    pool.close();
    peers.close();
  }

  /** A relaying peer that records how many items each relayed call carries and answers each. */
  private final class Voucher extends IdlePeerHandler {
    @Override
    public CompletableFuture<GetPeerRateLimitsResp> relay(
        GetPeerRateLimitsReq request, Duration within) {
      relayed.add(request.getRequestsCount());
      GetPeerRateLimitsResp.Builder resp = GetPeerRateLimitsResp.newBuilder();
      request.getRequestsList().forEach(r -> resp.addRateLimits(RateLimitResp.getDefaultInstance()));
      return CompletableFuture.completedFuture(resp.build());
    }
  }

  private static RateLimitRequest hit(String key) {
    return RateLimitRequest.builder("n", key).hits(1).limit(5).duration(60_000).build();
  }

  @Test
  void retain_peersThatLeft_theirRelayBatchersDropped() {
    RelayForwarder relays = new RelayForwarder(pool, settings, clock);
    relays.forward("a:1", "b:1", hit("k1"));
    relays.forward("a:1", "c:1", hit("k2"));
    relays.forward("d:1", "b:1", hit("k3"));
    assertThat(relays.pairs()).isEqualTo(3);

    relays.retain(List.of("a:1", "b:1"));

    assertThat(relays.pairs()).as("only a relaying b is left").isEqualTo(1);
    relays.close();
  }

  @Test
  void forward_severalOnAnEventLoopInOneRound_leaveAsOneRelayCallAtTheRoundEnd() throws Exception {
    RelayForwarder relays = new RelayForwarder(relaying, settings, clock);
    List<CompletableFuture<RateLimitResponse>> answers = new ArrayList<>();

    loop.submit(
            () -> {
              answers.add(relays.forward("a:1", "b:1", hit("k1")));
              answers.add(relays.forward("a:1", "b:1", hit("k2")));
              answers.add(relays.forward("a:1", "b:1", hit("k3")));
            })
        .get(5, TimeUnit.SECONDS);
    loop.submit(() -> {}).get(5, TimeUnit.SECONDS);

    assertThat(relayed).as("items per relay call").containsExactly(3);
    assertThat(answers).allSatisfy(a -> assertThat(a.get(5, TimeUnit.SECONDS).error()).isEmpty());
    relays.close();
  }
}
