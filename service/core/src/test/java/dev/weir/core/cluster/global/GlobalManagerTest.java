package dev.weir.core.cluster.global;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerClient;
import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.cluster.peer.PeerClientSettings;
import dev.weir.core.cluster.peer.PeerHandler;
import dev.weir.core.cluster.peer.PeersService;
import dev.weir.core.cluster.ring.HashRing;
import dev.weir.core.cluster.ring.PeerHash;
import dev.weir.core.engine.LeakyBucketState;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.WindowCounterCheck;
import dev.weir.proto.gubernator.Algorithm;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class GlobalManagerTest {

  private static final String SELF = "self:1";
  private static final String OWNER = "owner:1";

  private final FakeClock clock = new FakeClock();
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final InMemoryBucketStore store = new InMemoryBucketStore(clock);
  private final List<List<RateLimitRequest>> hitsReceived = new ArrayList<>();
  private final List<List<UpdatePeerGlobal>> globalsReceived = new ArrayList<>();
  private final List<Server> servers = new ArrayList<>();
  private final PeerClientPool pool = new PeerClientPool(this::inProcessClient);

  @AfterEach
  void stop() {
    pool.close();
    servers.forEach(Server::shutdownNow);
  }

  private PeerClient inProcessClient(String address) {
    PeerHandler handler =
        new PeerHandler() {
          @Override
          public List<RateLimitResponse> checkAsOwner(List<RateLimitRequest> requests) {
            hitsReceived.add(requests);
            return requests.stream()
                .map(r -> RateLimitResponse.of(Status.UNDER_LIMIT, r.limit(), 0, 0))
                .toList();
          }

          @Override
          public void applyGlobals(List<UpdatePeerGlobal> globals) {
            globalsReceived.add(globals);
          }

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
          new PeerClientSettings(1000, Duration.ofNanos(500_000), Duration.ofSeconds(5), false),
          scheduler,
          clock);
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private GlobalManager manager(HashRing ring, int batchLimit) {
    return new GlobalManager(
        SELF, () -> ring, pool, new WindowCounterCheck(store), rs -> List.of(), store, scheduler,
        clock, Duration.ofMillis(100), batchLimit, Duration.ofSeconds(5));
  }

  private static HashRing ring(String... peers) {
    return HashRing.of(List.of(peers), 64, PeerHash.FNV1A);
  }

  private static RateLimitRequest hit(String key, long hits, long createdAt) {
    return RateLimitRequest.builder("g", key).hits(hits).limit(10).duration(60_000)
        .behavior(Behavior.GLOBAL).createdAt(createdAt).build();
  }

  @Test
  void queueHits_sameKey_summedAndSentOnceAfterSyncWait() {
    GlobalManager m = manager(ring(OWNER), 1000);
    m.queueHits(hit("a", 2, 1000));
    m.queueHits(hit("a", 3, 2000));
    m.queueHits(hit("a", 0, 3000));

    scheduler.advance(Duration.ofMillis(99));
    assertThat(hitsReceived).isEmpty();
    scheduler.advance(Duration.ofMillis(1));

    assertThat(hitsReceived).hasSize(1);
    RateLimitRequest sent = hitsReceived.get(0).get(0);
    assertThat(sent.hits()).isEqualTo(5);
    assertThat(sent.createdAt()).as("first request's created_at").isEqualTo(1000);
    assertThat(sent.has(Behavior.GLOBAL)).isTrue();
  }

  @Test
  void queueHits_resetRemainingAmongHits_orIntoTheSum() {
    GlobalManager m = manager(ring(OWNER), 1000);
    m.queueHits(hit("a", 1, 1000).withBehavior(Behavior.GLOBAL | Behavior.RESET_REMAINING));
    m.queueHits(hit("a", 1, 1000));
    scheduler.advance(Duration.ofMillis(100));
    assertThat(hitsReceived.get(0).get(0).has(Behavior.RESET_REMAINING)).isTrue();
  }

  @Test
  void queueHits_batchLimitKeys_sentAtOnce() {
    GlobalManager m = manager(ring(OWNER), 2);
    m.queueHits(hit("a", 1, 1000));
    assertThat(hitsReceived).isEmpty();
    m.queueHits(hit("b", 1, 1000));
    assertThat(hitsReceived).hasSize(1);
    assertThat(hitsReceived.get(0)).hasSize(2);
    assertThat(scheduler.pending()).isZero();
  }

  @Test
  void queueBroadcast_afterSyncWait_exactStateSentToEveryOtherPeer() {
    GlobalManager m = manager(ring(SELF, OWNER, "third:1"), 1000);
    RateLimitRequest r = hit("a", 4, clock.wallMillis());
    new WindowCounterCheck(store).check(r);
    m.queueBroadcast(r);

    scheduler.advance(Duration.ofMillis(100));

    assertThat(globalsReceived).hasSize(2);
    UpdatePeerGlobal u = globalsReceived.get(0).get(0);
    assertThat(u.getKey()).isEqualTo("g_a");
    assertThat(u.getStatus().getRemaining()).isEqualTo(6);
    assertThat(u.getCreatedAt()).isEqualTo(r.createdAt());
    assertThat(u.getDuration()).isEqualTo(60_000);
    assertThat(u.hasWeirState()).isTrue();
  }

  @Test
  void apply_gubernatorStyleTokenUpdate_rebuiltExpiringOneAfterResetTime() {
    GlobalManager m = manager(ring(SELF, OWNER), 1000);
    long reset = clock.wallMillis() + 30_000;
    m.apply(
        List.of(
            UpdatePeerGlobal.newBuilder()
                .setKey("g_a")
                .setAlgorithm(Algorithm.TOKEN_BUCKET)
                .setDuration(60_000)
                .setCreatedAt(clock.wallMillis() - 30_000)
                .setStatus(
                    RateLimitResp.newBuilder().setLimit(10).setRemaining(3).setResetTime(reset))
                .build()));
    assertThat(store.get("g_a"))
        .contains(
            new TokenBucketState(
                Status.UNDER_LIMIT, 10, 60_000, 3, clock.wallMillis() - 30_000, reset + 1));
    assertThat(RateLimitEngine.tokenBucketResetTime((TokenBucketState) store.get("g_a").get()))
        .as("the copy reports the owner's reset_time")
        .isEqualTo(reset);
  }

  @Test
  void apply_gubernatorStyleLeakyUpdate_rebuiltExpiringOneAfterResetTime() {
    GlobalManager m = manager(ring(SELF, OWNER), 1000);
    long reset = clock.wallMillis() + 30_000;
    m.apply(
        List.of(
            UpdatePeerGlobal.newBuilder()
                .setKey("g_a")
                .setAlgorithm(Algorithm.LEAKY_BUCKET)
                .setDuration(60_000)
                .setCreatedAt(clock.wallMillis())
                .setStatus(
                    RateLimitResp.newBuilder().setLimit(10).setRemaining(4).setResetTime(reset))
                .build()));
    assertThat(store.get("g_a"))
        .contains(new LeakyBucketState(10, 60_000, 10, 4, clock.wallMillis(), reset + 1));
  }
}
