package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.global.GlobalManager;
import dev.weir.core.cluster.peer.PeerClient;
import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.cluster.peer.PeerClientSettings;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.WindowCounterCheck;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.PeersV1Grpc;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * How a member sends items to their owner with batching on: a call's items for one owner leave
 * together in one batch, answers come back to the right items, and a lone item leaves at once.
 */
class BatchedForwardingTest {

  private static final String SELF = "self:1";
  private static final String OWNER = "owner:1";

  private final FakeClock clock = new FakeClock();
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final InMemoryBucketStore store = new InMemoryBucketStore(clock);
  private final HashRing two = HashRing.of(List.of(SELF, OWNER), 64, PeerHash.FNV1A);
  private final List<Integer> batchSizes = new CopyOnWriteArrayList<>();
  private final List<StreamObserver<GetPeerRateLimitsResp>> held = new CopyOnWriteArrayList<>();
  private final List<GetPeerRateLimitsReq> heldRequests = new CopyOnWriteArrayList<>();
  private volatile boolean hold;
  private Server owner;
  private PeerClientPool toOwner;
  private ClusterRateLimitService service;

  @BeforeEach
  void start() throws Exception {
    String name = InProcessServerBuilder.generateName();
    owner =
        InProcessServerBuilder.forName(name)
            .directExecutor()
            .addService(
                new PeersV1Grpc.PeersV1ImplBase() {
                  @Override
                  public void getPeerRateLimits(
                      GetPeerRateLimitsReq request,
                      StreamObserver<GetPeerRateLimitsResp> answer) {
                    batchSizes.add(request.getRequestsCount());
                    if (hold) {
                      held.add(answer);
                      heldRequests.add(request);
                    } else {
                      answerEach(request, answer);
                    }
                  }
                })
            .build()
            .start();
    toOwner =
        new PeerClientPool(
            address ->
                new PeerClient(
                    address,
                    InProcessChannelBuilder.forName(name).directExecutor().build(),
                    new PeerClientSettings(1000, Duration.ofMillis(1), Duration.ofSeconds(5), false),
                    scheduler,
                    clock),
            clock);
    WindowCounterCheck local = new WindowCounterCheck(store);
    service =
        new ClusterRateLimitService(
            SELF,
            () -> two,
            local,
            toOwner,
            new GlobalManager(
                SELF, () -> two, toOwner, local, store, scheduler, clock,
                Duration.ofMillis(100), 1000, Duration.ofSeconds(5)),
            clock,
            scheduler,
            Duration.ZERO);
  }

  @AfterEach
  void stop() {
    toOwner.close();
    owner.shutdownNow();
  }

  /** Answers each item with its own limit minus one left, so every answer names its item. */
  private static void answerEach(
      GetPeerRateLimitsReq request, StreamObserver<GetPeerRateLimitsResp> answer) {
    GetPeerRateLimitsResp.Builder resp = GetPeerRateLimitsResp.newBuilder();
    request
        .getRequestsList()
        .forEach(
            r ->
                resp.addRateLimits(
                    RateLimitResp.newBuilder()
                        .setLimit(r.getLimit())
                        .setRemaining(r.getLimit() - 1)));
    answer.onNext(resp.build());
    answer.onCompleted();
  }

  private List<String> keysOwnedBy(String node, int count) {
    List<String> keys = new ArrayList<>();
    for (int i = 0; keys.size() < count; i++) {
      if (two.ownerOf("n_k" + i).equals(node)) {
        keys.add("k" + i);
      }
    }
    return keys;
  }

  private static RateLimitRequest hit(String key, long limit) {
    return RateLimitRequest.builder("n", key).hits(1).limit(limit).duration(60_000).build();
  }

  @Test
  void check_itemsOfOneOwnerMixedWithLocalOnes_leaveInOneBatchAndEachGetsItsOwnAnswer() {
    List<String> remote = keysOwnedBy(OWNER, 5);
    List<String> local = keysOwnedBy(SELF, 2);
    List<RateLimitRequest> call =
        List.of(
            hit(remote.get(0), 10),
            hit(local.get(0), 100),
            hit(remote.get(1), 11),
            hit(remote.get(2), 12),
            hit(local.get(1), 100),
            hit(remote.get(3), 13),
            hit(remote.get(4), 14));

    List<RateLimitResponse> answers = service.decide(call).join();

    assertThat(batchSizes).containsExactly(5);
    assertThat(answers)
        .extracting(RateLimitResponse::remaining)
        .containsExactly(9L, 99L, 10L, 11L, 99L, 12L, 13L);
    assertThat(answers.get(0).metadata()).containsEntry("owner", OWNER);
    assertThat(answers.get(1).metadata()).doesNotContainKey("owner");
    assertThat(answers).extracting(RateLimitResponse::status).containsOnly(Status.UNDER_LIMIT);
  }

  @Test
  void check_oneOwnersItemsWithANoBatchingOneOffAnEventLoop_itLeavesAloneAndTheOthersInOneBatch() {
    List<String> keys = keysOwnedBy(OWNER, 10);
    List<RateLimitRequest> call = new ArrayList<>();
    call.add(
        RateLimitRequest.builder("n", keys.get(0))
            .hits(1)
            .limit(10)
            .duration(60_000)
            .behavior(Behavior.NO_BATCHING)
            .build());
    for (int i = 1; i < 10; i++) {
      call.add(hit(keys.get(i), 10 + i));
    }

    List<RateLimitResponse> answers = service.decide(call).join();

    assertThat(batchSizes).containsExactlyInAnyOrder(1, 9);
    assertThat(answers)
        .extracting(RateLimitResponse::remaining)
        .containsExactly(9L, 10L, 11L, 12L, 13L, 14L, 15L, 16L, 17L, 18L);
  }

  @Test
  void check_loneItemWithNothingInFlight_isSentAtOnceWithoutWaitingForATimer() {
    String key = keysOwnedBy(OWNER, 1).get(0);

    CompletableFuture<List<RateLimitResponse>> answer = service.decide(List.of(hit(key, 10)));

    assertThat(scheduler.pending()).isZero();
    assertThat(batchSizes).containsExactly(1);
    assertThat(answer.join().get(0).remaining()).isEqualTo(9);
  }

  @Test
  void check_callsWhileOneIsInFlight_waitBehindItAndLeaveTogetherWhenItIsAnswered() {
    hold = true;
    List<String> keys = keysOwnedBy(OWNER, 3);
    var first = service.decide(List.of(hit(keys.get(0), 10)));
    var second = service.decide(List.of(hit(keys.get(1), 11)));
    var third = service.decide(List.of(hit(keys.get(2), 12)));
    assertThat(batchSizes).containsExactly(1);

    hold = false;
    answerEach(heldRequests.get(0), held.get(0));

    assertThat(batchSizes).containsExactly(1, 2);
    assertThat(first.join().get(0).remaining()).isEqualTo(9);
    assertThat(second.join().get(0).remaining()).isEqualTo(10);
    assertThat(third.join().get(0).remaining()).isEqualTo(11);
  }
}
