package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.IdlePeerHandler;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.TransferBucketsReq;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link PeerClientPool#transferBuckets} to an owner this node finds down, against in-process peers
 * on a fake clock whose indirect probe answers the test completes: a relayed transfer that fails
 * falls back to a direct one once the probes found that no peer reaches the owner, and every leg
 * of one transfer shares its one timeout. A relayed item refused unsent and relayed once more
 * through the verdict's voucher shares its first relay's timeout too.
 */
class PeerClientPoolTransferTest {

  private static final String SELF = "10.0.0.1:1051";
  private static final String RELAY = "10.0.0.2:1051";
  private static final String OWNER = "10.0.0.3:1051";
  private static final String SECOND_RELAY = "10.0.0.4:1051";
  private static final Duration TIMEOUT = Duration.ofSeconds(1);

  private final FakeClock clock = new FakeClock();
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final PeerLiveness liveness = new PeerLiveness(clock);
  private final List<Server> servers = new ArrayList<>();
  private final Map<String, PeerHandler> handlers = new ConcurrentHashMap<>();
  private volatile Set<String> dropped = Set.of();
  private final PeerClientPool pool =
      new PeerClientPool(this::client, liveness, peer -> false, peer -> !dropped.contains(peer));
  private volatile Set<String> members = Set.of(SELF, RELAY, OWNER);
  private final IndirectProbes probes =
      new IndirectProbes(
          SELF,
          liveness,
          pool,
          () -> members,
          scheduler,
          Duration.ofMillis(500),
          TIMEOUT,
          () -> {});
  private final Relay relay = new Relay();
  private final Owner owner = new Owner();
  private final Relay secondRelay = new Relay();

  PeerClientPoolTransferTest() {
    handlers.put(RELAY, relay);
    handlers.put(OWNER, owner);
    handlers.put(SECOND_RELAY, secondRelay);
    liveness.addListener(probes);
    pool.relayThrough(
        probes,
        new RelayForwarder(
            pool, new PeerClientSettings(1000, Duration.ofMillis(1), TIMEOUT, true), clock));
  }

  @AfterEach
  void stop() {
    probes.close();
    pool.close();
    servers.forEach(Server::shutdownNow);
  }

  private PeerClient client(String address) {
    try {
      String name = InProcessServerBuilder.generateName();
      servers.add(
          InProcessServerBuilder.forName(name)
              .directExecutor()
              .addService(new PeersService(handlers.get(address), clock))
              .build()
              .start());
      return new PeerClient(
          address,
          InProcessChannelBuilder.forName(name).directExecutor().build(),
          new PeerClientSettings(1000, Duration.ofMillis(1), TIMEOUT, true),
          scheduler,
          clock);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private List<BucketSnapshot> buckets() {
    long now = clock.wallMillis();
    return List.of(
        PeerProtos.toSnapshot(
            "n_k", new TokenBucketState(Status.UNDER_LIMIT, 10, 600_000, 3, now, now + 600_000)));
  }

  /** Marks the owner down here while the relay's indirect probe of it is unanswered. */
  private void ownerDownVerdictPending() {
    liveness.notAnswering(OWNER, "cut", true);
    assertThat(probes.via(OWNER)).as("the first checker, before the verdict").isEqualTo(RELAY);
  }

  /**
   * Adds the second relay to the members, marks the owner down, and has the relay vouch for it while
   * the second relay does not.
   */
  private void relayVouchesForTheDownOwner() {
    members = Set.of(SELF, RELAY, OWNER, SECOND_RELAY);
    ownerDownVerdictPending();
    relay.answerProbe(true);
    secondRelay.answerProbe(false);
    assertThat(probes.voucher(OWNER)).as("the established voucher").isEqualTo(RELAY);
  }

  /**
   * Relays through a forwarder that batches items, marks the owner down, and has the relay answer
   * its probe that it reaches the owner.
   */
  private void batchingRelayReachesTheOwner() {
    pool.relayThrough(
        probes,
        new RelayForwarder(
            pool, new PeerClientSettings(1000, Duration.ofMillis(1), TIMEOUT, false), clock));
    ownerDownVerdictPending();
    relay.answerProbe(true);
  }

  @Test
  void relayedTransferRefused_noPeerReachesTheOwner_sentDirectlyAfterTheVerdict() {
    ownerDownVerdictPending();
    relay.refuseTransfers = true;

    CompletableFuture<Integer> transfer = pool.transferBuckets(OWNER, buckets(), SELF, TIMEOUT);

    assertThat(relay.transfers).as("relayed first").hasValue(1);
    assertThat(transfer).as("waiting for the probes' verdict").isNotDone();
    assertThat(owner.received).isEmpty();

    relay.answerProbe(false);

    assertThat(transfer.join()).isEqualTo(1);
    assertThat(owner.received)
        .as("the owner holds the transferred count, as the sender's")
        .containsExactly("from " + SELF + ": n_k remaining 3");
  }

  @Test
  void relayedTransferRefused_aPeerStillReachesTheOwner_failsWithTheRelaysError() {
    ownerDownVerdictPending();
    relay.refuseTransfers = true;

    CompletableFuture<Integer> transfer = pool.transferBuckets(OWNER, buckets(), SELF, TIMEOUT);
    relay.answerProbe(true);

    assertThatThrownBy(transfer::join)
        .hasMessageContaining("handing buckets to '" + OWNER + "' through")
        .hasMessageContaining("relay refused the transfer");
    assertThat(owner.received).as("not sent directly while a peer vouches").isEmpty();
  }

  @Test
  void relayedTransferRefused_theVerdictNamesAnotherVoucher_relayedOnceMoreThroughIt() {
    members = Set.of(SELF, RELAY, OWNER, SECOND_RELAY);
    ownerDownVerdictPending();
    relay.refuseTransfers = true;

    CompletableFuture<Integer> transfer = pool.transferBuckets(OWNER, buckets(), SELF, TIMEOUT);
    relay.answerProbe(false);
    secondRelay.answerProbe(true);

    assertThat(transfer.join()).isEqualTo(1);
    assertThat(relay.transfers).as("the first checker, which refused").hasValue(1);
    assertThat(secondRelay.transfers).as("the voucher the verdict named").hasValue(1);
    assertThat(owner.received).as("not sent directly while a peer vouches").isEmpty();
  }

  @Test
  void establishedVoucherRefusesUnsent_aNewRoundNamesAnotherVoucher_relayedOnceMoreThroughIt() {
    relayVouchesForTheDownOwner();
    relay.refuseTransfersUnsent = true;

    CompletableFuture<Integer> transfer = pool.transferBuckets(OWNER, buckets(), SELF, TIMEOUT);

    assertThat(transfer).as("waiting for a new round's verdict").isNotDone();
    relay.answerProbe(false);
    secondRelay.answerProbe(true);
    assertThat(transfer.join()).isEqualTo(1);
    assertThat(relay.transfers).as("the voucher that stopped relaying").hasValue(1);
    assertThat(secondRelay.transfers).as("the voucher the new round named").hasValue(1);
    assertThat(owner.received).as("not sent directly while a peer vouches").isEmpty();
  }

  @Test
  void voucherRefusedUnsentByThePool_aNewRoundNamesAnotherVoucher_itemRelayedThroughIt() {
    relayVouchesForTheDownOwner();
    // Discovery drops the voucher between the item's choice of it and the relay call.
    dropped = Set.of(RELAY);
    pool.retain(Set.of(SELF, OWNER, SECOND_RELAY));

    CompletableFuture<RateLimitResponse> item = pool.forward(OWNER, item());

    assertThat(item).as("waiting for a new round's verdict").isNotDone();
    secondRelay.answerProbe(true);
    assertThat(item.join().error()).isEmpty();
    assertThat(relay.itemsWithin).as("items relayed through the dropped voucher").isEmpty();
    assertThat(secondRelay.itemsWithin).as("items relayed through the new voucher").hasSize(1);
  }

  @Test
  void voucherRefusedUnsentByThePool_aNewRoundNamesAnotherVoucher_transferRelayedThroughIt() {
    relayVouchesForTheDownOwner();
    // Discovery drops the voucher between the transfer's choice of it and the relay call.
    dropped = Set.of(RELAY);
    pool.retain(Set.of(SELF, OWNER, SECOND_RELAY));

    CompletableFuture<Integer> transfer = pool.transferBuckets(OWNER, buckets(), SELF, TIMEOUT);

    assertThat(transfer).as("waiting for a new round's verdict").isNotDone();
    secondRelay.answerProbe(true);
    assertThat(transfer.join()).isEqualTo(1);
    assertThat(relay.transfers).as("transfers relayed through the dropped voucher").hasValue(0);
    assertThat(secondRelay.transfers).as("transfers relayed through the new voucher").hasValue(1);
    assertThat(owner.received).as("not sent directly while a peer vouches").isEmpty();
  }

  @Test
  void directTransferFailsLate_relayedLegGetsOnlyWhatIsLeftOfTheTimeout() {
    owner.onTransfer =
        () -> {
          clock.advance(Duration.ofMillis(700));
          ownerDownVerdictPending();
          throw new IllegalStateException("owner failed the transfer");
        };

    CompletableFuture<Integer> transfer = pool.transferBuckets(OWNER, buckets(), SELF, TIMEOUT);

    assertThat(transfer.join()).isEqualTo(1);
    assertThat(relay.transfers).hasValue(1);
    assertThat(relay.within)
        .as("the relay's wait for the owner, at most what is left of the 1 s timeout")
        .singleElement()
        .satisfies(within -> assertThat(within).isLessThanOrEqualTo(Duration.ofMillis(300)));
  }

  @Test
  void directTransferUsesTheWholeTimeout_relayedLegFailsAtOnceWithoutCallingTheRelay() {
    owner.onTransfer =
        () -> {
          clock.advance(TIMEOUT);
          ownerDownVerdictPending();
          throw new IllegalStateException("owner failed the transfer");
        };

    CompletableFuture<Integer> transfer = pool.transferBuckets(OWNER, buckets(), SELF, TIMEOUT);

    assertThat(transfer).isCompletedExceptionally();
    assertThatThrownBy(transfer::join)
        .hasMessageContaining("not handing 1 bucket(s) to peer '" + OWNER + "' through '" + RELAY)
        .hasMessageContaining("timeout of 1000 ms");
    assertThat(relay.transfers).as("the relay was not called").hasValue(0);
  }

  @Test
  void relayedItemRefusedUnsentLate_relayedOnceMoreWithinWhatIsLeftOfTheRelaysTimeout() {
    members = Set.of(SELF, RELAY, OWNER, SECOND_RELAY);
    ownerDownVerdictPending();
    relay.refuseItemsUnsent = () -> clock.advance(Duration.ofMillis(700));

    CompletableFuture<RateLimitResponse> item = pool.forward(OWNER, item());
    relay.answerProbe(false);
    secondRelay.answerProbe(true);

    assertThat(item.join().error()).isEmpty();
    assertThat(secondRelay.itemsWithin)
        .as("the second relay's wait for the owner, at most what is left of the 1 s timeout")
        .singleElement()
        .satisfies(within -> assertThat(within).isLessThanOrEqualTo(Duration.ofMillis(300)));
  }

  @Test
  void relayedItemRefusedUnsentAfterTheWholeTimeout_failsWithoutCallingTheVoucher() {
    members = Set.of(SELF, RELAY, OWNER, SECOND_RELAY);
    ownerDownVerdictPending();
    relay.refuseItemsUnsent = () -> clock.advance(TIMEOUT);

    CompletableFuture<RateLimitResponse> item = pool.forward(OWNER, item());
    relay.answerProbe(false);
    secondRelay.answerProbe(true);

    assertThatThrownBy(item::join)
        .hasMessageContaining(
            "not relaying the item to peer '" + OWNER + "' through '" + SECOND_RELAY + "'")
        .hasMessageContaining("WEIR_BATCH_TIMEOUT of 1000 ms is used up")
        .hasMessageContaining("does not reach " + OWNER);
    assertThat(secondRelay.itemsWithin).as("the voucher was not called").isEmpty();
  }

  @Test
  void relayedCall_itemsOfOneOwner_reachTheVoucherAsOneRelayCall() {
    batchingRelayReachesTheOwner();
    List<RateLimitRequest> items = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      items.add(RateLimitRequest.builder("n", "k" + i).hits(1).limit(10).duration(600_000).build());
    }

    List<CompletableFuture<RateLimitResponse>> answers = pool.forwardAll(OWNER, items);

    assertThat(relay.itemCounts).as("items per relay call").containsExactly(5);
    assertThat(answers).allSatisfy(a -> assertThat(a.join().error()).isEmpty());
  }

  @Test
  void relayedCall_noBatchingItem_goesAloneAndTheOthersTogether() {
    batchingRelayReachesTheOwner();
    List<RateLimitRequest> items =
        List.of(
            RateLimitRequest.builder("n", "k0")
                .hits(1)
                .limit(10)
                .duration(600_000)
                .behavior(Behavior.NO_BATCHING)
                .build(),
            RateLimitRequest.builder("n", "k1").hits(1).limit(10).duration(600_000).build(),
            RateLimitRequest.builder("n", "k2").hits(1).limit(10).duration(600_000).build());

    List<CompletableFuture<RateLimitResponse>> answers = pool.forwardAll(OWNER, items);

    assertThat(relay.itemCounts)
        .as("items per relay call: the NO_BATCHING item alone, the others together")
        .containsExactlyInAnyOrder(1, 2);
    assertThat(answers).allSatisfy(a -> assertThat(a.join().error()).isEmpty());
  }

  private static RateLimitRequest item() {
    return RateLimitRequest.builder("n", "k").hits(1).limit(10).duration(600_000).build();
  }

  /** A relaying peer whose indirect probe answer the test completes. */
  private static final class Relay extends IdlePeerHandler {
    final AtomicInteger transfers = new AtomicInteger();
    final List<Duration> within = new CopyOnWriteArrayList<>();
    final List<CompletableFuture<GetPeerRateLimitsResp>> probes = new CopyOnWriteArrayList<>();
    volatile boolean refuseTransfers;
    volatile boolean refuseTransfersUnsent;

    final List<Duration> itemsWithin = new CopyOnWriteArrayList<>();
    final List<Integer> itemCounts = new CopyOnWriteArrayList<>();
    volatile Runnable refuseItemsUnsent;

    @Override
    public CompletableFuture<GetPeerRateLimitsResp> relay(
        GetPeerRateLimitsReq request, Duration within) {
      if (request.getRequestsCount() > 0) {
        itemsWithin.add(within);
        itemCounts.add(request.getRequestsCount());
        Runnable refusing = refuseItemsUnsent;
        if (refusing != null) {
          refusing.run();
          return CompletableFuture.failedFuture(new UnsentRelay("does not reach " + OWNER));
        }
        GetPeerRateLimitsResp.Builder resp = GetPeerRateLimitsResp.newBuilder();
        request.getRequestsList().forEach(r -> resp.addRateLimits(RateLimitResp.getDefaultInstance()));
        return CompletableFuture.completedFuture(resp.build());
      }
      CompletableFuture<GetPeerRateLimitsResp> answer = new CompletableFuture<>();
      probes.add(answer);
      return answer;
    }

    /** Answers the pending indirect probe: whether this peer reaches the owner. */
    void answerProbe(boolean reaches) {
      assertThat(probes).as("one probe pending").hasSize(1);
      CompletableFuture<GetPeerRateLimitsResp> probe = probes.remove(0);
      if (reaches) {
        probe.complete(GetPeerRateLimitsResp.getDefaultInstance());
      } else {
        probe.completeExceptionally(new PeerException(OWNER, "does not reach " + OWNER, null));
      }
    }

    @Override
    public CompletableFuture<Integer> relayTransfer(TransferBucketsReq request, Duration within) {
      transfers.incrementAndGet();
      this.within.add(within);
      if (refuseTransfersUnsent) {
        return CompletableFuture.failedFuture(new UnsentRelay("does not reach " + OWNER));
      }
      return refuseTransfers
          ? CompletableFuture.failedFuture(
              new PeerException(OWNER, "relay refused the transfer", null))
          : CompletableFuture.completedFuture(request.getBucketsCount());
    }
  }

  /** The owner: records the buckets it accepts. */
  private static final class Owner extends IdlePeerHandler {
    final List<String> received = new CopyOnWriteArrayList<>();
    volatile Runnable onTransfer = () -> {};

    @Override
    public int acceptBuckets(List<BucketSnapshot> buckets, String from) {
      Runnable hook = onTransfer;
      onTransfer = () -> {};
      hook.run();
      for (BucketSnapshot b : buckets) {
        received.add(
            "from " + from + ": " + b.getKey() + " remaining " + b.getTokenBucket().getRemaining());
      }
      return buckets.size();
    }
  }
}
