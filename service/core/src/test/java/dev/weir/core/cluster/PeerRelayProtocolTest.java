package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.cluster.peer.UnsentRelay;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import java.time.Duration;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.cluster.peer.auth.PeerSecurity;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.testkit.LocalCluster.Node;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.PeersV1Grpc;
import dev.weir.proto.gubernator.TransferBucketsReq;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Weir's {@code weir_relay_to} on a real three-node cluster: a relaying node sends the call on to
 * its target, which answers as the owner (a relayed call is not relayed again), and refuses a
 * target that is not a member other than itself, or that it finds down, with {@code
 * FAILED_PRECONDITION} (never {@code UNAVAILABLE}, which would take the relaying node down at the
 * caller). A relayed bucket transfer reaches its target with its sender's {@code from}, so the
 * target merges it, however often and by whichever path it came, once as that sender's.
 */
class PeerRelayProtocolTest {

  private LocalCluster cluster;
  private final List<ManagedChannel> channels = new ArrayList<>();

  @BeforeEach
  void start() {
    cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS);
  }

  @AfterEach
  void stop() throws InterruptedException {
    for (ManagedChannel channel : channels) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    cluster.close();
  }

  private PeersV1Grpc.PeersV1BlockingStub peer(Node node) {
    ManagedChannel channel = PeerSecurity.sharedSecret(cluster.secret()).channel(node.address());
    channels.add(channel);
    return PeersV1Grpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);
  }

  private static GetPeerRateLimitsReq relay(String target, String key) {
    return relay(target, key, System.currentTimeMillis());
  }

  private static GetPeerRateLimitsReq relay(String target, String key, long createdAt) {
    return GetPeerRateLimitsReq.newBuilder()
        .setWeirRelayTo(target)
        .addRequests(
            PeerProtos.toProto(
                RateLimitRequest.builder("relay", key)
                    .hits(1)
                    .limit(5)
                    .duration(600_000)
                    .build()
                    .withCreatedAt(createdAt)))
        .build();
  }

  @Test
  void relay_toAMember_answeredByTheTargetAsOwner() {
    Node via = cluster.node(1);
    Node target = cluster.node(2);
    String key = cluster.keyOwnedBy(cluster.node(0), "relay", "k:");

    GetPeerRateLimitsResp resp = peer(via).getPeerRateLimits(relay(target.address(), key));

    assertThat(resp.getRateLimitsCount()).isEqualTo(1);
    assertThat(resp.getRateLimits(0).getError()).isEmpty();
    assertThat(resp.getRateLimits(0).getRemaining()).isEqualTo(4);
    assertThat(target.store().get("relay_" + key)).as("counted by the target").isPresent();
    assertThat(via.store().get("relay_" + key)).as("not by the relaying node").isEmpty();
    assertThat(cluster.node(0).store().get("relay_" + key))
        .as("the target did not forward it on to the ring's owner")
        .isEmpty();
  }

  @Test
  void relay_toANonMember_refusedNamingTheField() {
    StatusRuntimeException e =
        catchThrowableOfType(
            StatusRuntimeException.class,
            () -> peer(cluster.node(1)).getPeerRateLimits(relay("127.0.0.1:1", "k")));

    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(e.getStatus().getDescription())
        .isEqualTo("field 'weir_relay_to' (127.0.0.1:1) is not a member of this node's cluster");
  }

  @Test
  void relay_refusedBeforeSendingOn_carriesTheUnsentTrailer() {
    StatusRuntimeException e =
        catchThrowableOfType(
            StatusRuntimeException.class,
            () -> peer(cluster.node(1)).getPeerRateLimits(relay("127.0.0.1:1", "k")));

    assertThat(e.getTrailers().get(UnsentRelay.TRAILER)).isEqualTo("1");
    assertThat(UnsentRelay.unsent(e)).isTrue();
    assertThat(e.getTrailers().get(UnsentRelay.TARGET_LEFT)).isNull();
  }

  @Test
  void relay_failingAfterSendingOn_carriesNoUnsentTrailer() {
    Node via = cluster.node(1);
    Node target = cluster.node(2);
    target.beforeOwnerCheck(
        () -> {
          throw new IllegalStateException("the owner failed");
        });

    StatusRuntimeException e =
        catchThrowableOfType(
            StatusRuntimeException.class,
            () -> peer(via).getPeerRateLimits(relay(target.address(), "k")));

    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(e.getTrailers().get(UnsentRelay.TRAILER)).isNull();
    assertThat(UnsentRelay.unsent(e)).isFalse();
  }

  @Test
  void relay_toItself_refused() {
    Node via = cluster.node(1);
    StatusRuntimeException e =
        catchThrowableOfType(
            StatusRuntimeException.class,
            () -> peer(via).getPeerRateLimits(relay(via.address(), "k")));

    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(e.getStatus().getDescription()).contains("names this node");
  }

  @Test
  void relay_toATargetItFindsDown_refusedWithoutCallingIt() {
    Node via = cluster.node(1);
    Node target = cluster.node(2);
    cluster.kill(target);
    via.cluster().liveness().unreachable(target.address(), "killed by the test");

    StatusRuntimeException e =
        catchThrowableOfType(
            StatusRuntimeException.class,
            () -> peer(via).getPeerRateLimits(relay(target.address(), "k")));

    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(e.getStatus().getDescription())
        .startsWith(
            "peer '" + via.address() + "' does not reach '" + target.address() + "' either");
  }

  /**
   * The relaying node {@code via} of a three-node cluster in fake time, its peer {@code leaving}
   * and a key {@code leaving} owns.
   */
  private record FakeTimeLeaver(
      FakeClock clock, FakeScheduler timers, Node via, Node leaving, String key) {

    /** Returns a relay of one hit on {@code key} to {@code leaving}, created now in fake time. */
    GetPeerRateLimitsReq relayToLeaver() {
      return relay(leaving.address(), key, clock.wallMillis());
    }
  }

  /**
   * Replaces the cluster by three nodes in fake time and returns node 1 as the relaying node and
   * node 2 as the one to leave.
   */
  private FakeTimeLeaver startInFakeTimeWithALeaver() {
    cluster.close();
    FakeClock clock = new FakeClock();
    FakeScheduler timers = new FakeScheduler(clock);
    cluster = LocalCluster.startInFakeTime(3, ClusterForwardingTest.SETTINGS, clock, timers);
    Node leaving = cluster.node(2);
    return new FakeTimeLeaver(
        clock, timers, cluster.node(1), leaving, cluster.keyOwnedBy(leaving, "relay", "k:"));
  }

  @Test
  void relay_toAMemberThatAnnouncedItsLeave_passedOnWithinABatchTimeout_thenRefusedAsLeft() {
    FakeTimeLeaver t = startInFakeTimeWithALeaver();
    t.via().cluster().announce(t.leaving().address(), true);

    GetPeerRateLimitsResp passedOn = peer(t.via()).getPeerRateLimits(t.relayToLeaver());

    assertThat(passedOn.getRateLimitsCount()).isEqualTo(1);
    assertThat(passedOn.getRateLimits(0).getError()).isEmpty();

    t.timers().advance(ClusterForwardingTest.SETTINGS.batchTimeout());
    StatusRuntimeException e =
        catchThrowableOfType(
            StatusRuntimeException.class, () -> peer(t.via()).getPeerRateLimits(t.relayToLeaver()));

    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(e.getStatus().getDescription())
        .isEqualTo(
            "field 'weir_relay_to' ("
                + t.leaving().address()
                + ") names a peer that announced it is leaving more than WEIR_BATCH_TIMEOUT ("
                + ClusterForwardingTest.SETTINGS.batchTimeout().toMillis()
                + " ms) ago: relays go only to members and to a peer that announced its leave"
                + " within the last WEIR_BATCH_TIMEOUT");
    assertThat(e.getTrailers().get(UnsentRelay.TARGET_LEFT)).isEqualTo("1");
    assertThat(e.getTrailers().get(UnsentRelay.TRAILER)).isEqualTo("1");
    assertThat(UnsentRelay.targetLeft(e)).isTrue();
  }

  @Test
  void indirectProbeOfALeaverThroughItsVoucher_withinItsGrace_answersOkWithoutTakingItDown() {
    FakeTimeLeaver t = startInFakeTimeWithALeaver();
    // SIGTERM: the leaver copies its buckets, stops serving probes and tells its peers it leaves.
    t.leaving().cluster().leave(Duration.ofSeconds(5));

    GetPeerRateLimitsResp probe =
        peer(t.via())
            .getPeerRateLimits(
                GetPeerRateLimitsReq.newBuilder().setWeirRelayTo(t.leaving().address()).build());

    assertThat(probe.getRateLimitsCount()).isZero();
    assertThat(t.via().cluster().liveness().isDown(t.leaving().address()))
        .as("the leaver down at its voucher within its grace")
        .isFalse();
    GetPeerRateLimitsResp item = peer(t.via()).getPeerRateLimits(t.relayToLeaver());
    assertThat(item.getRateLimitsCount()).isEqualTo(1);
    assertThat(item.getRateLimits(0).getError()).isEmpty();
  }

  @Test
  void probesOfALeaverStillCopyingBeforeItsNotice_answeredAsServing_directAndRelayed()
      throws Exception {
    Node via = cluster.node(1);
    // A member that joined, as a started pod does: its probes answer from its serving flag.
    Node leaving = cluster.restart(cluster.node(2));
    assertThat(leaving.cluster().serving()).as("serving once joined").isTrue();
    String key = cluster.keyOwnedBy(leaving, "relay", "k:");
    leaving.check(
        RateLimitRequest.builder("relay", key).hits(1).limit(5).duration(600_000).build());
    CountDownLatch copying = new CountDownLatch(1);
    CountDownLatch probed = new CountDownLatch(1);
    for (Node node : cluster.nodes()) {
      if (node != leaving) {
        node.beforeAcceptBuckets(
            () -> {
              copying.countDown();
              awaitQuietly(probed);
            });
      }
    }
    // SIGTERM: the leaver copies its buckets to their next owners before its leave notice.
    CompletableFuture<Void> left =
        CompletableFuture.runAsync(() -> leaving.cluster().leave(Duration.ofSeconds(5)));
    assertThat(copying.await(10, TimeUnit.SECONDS)).as("the leaver's copy arrived").isTrue();
    GetPeerRateLimitsResp relayed;
    GetPeerRateLimitsResp direct;
    boolean servingWhileCopying;
    try {
      servingWhileCopying = leaving.cluster().serving();
      relayed =
          peer(via)
              .getPeerRateLimits(
                  GetPeerRateLimitsReq.newBuilder().setWeirRelayTo(leaving.address()).build());
      direct = peer(leaving).getPeerRateLimits(GetPeerRateLimitsReq.getDefaultInstance());
    } finally {
      probed.countDown();
    }
    left.get(10, TimeUnit.SECONDS);

    assertThat(servingWhileCopying).as("serving while it copies, before its notice").isTrue();
    assertThat(relayed.getRateLimitsCount()).isZero();
    assertThat(direct.getRateLimitsCount()).isZero();
    assertThat(via.cluster().liveness().isDown(leaving.address())).isFalse();
    assertThat(leaving.cluster().serving()).as("serving once its notice went out").isFalse();
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static TransferBucketsReq transfer(
      String from, String relayTo, String hashKey, TokenBucketState state) {
    TransferBucketsReq.Builder req =
        TransferBucketsReq.newBuilder()
            .setFrom(from)
            .addBuckets(PeerProtos.toSnapshot(hashKey, state));
    if (relayTo != null) {
      req.setWeirRelayTo(relayTo);
    }
    return req.build();
  }

  private static long remaining(Node node, String hashKey) {
    return ((TokenBucketState) node.store().get(hashKey).orElseThrow()).remaining();
  }

  @Test
  void relayedTransfer_mergedAsTheSendersOnce_whateverPathItsRetriesTake() {
    Node sender = cluster.node(0);
    Node via = cluster.node(1);
    Node target = cluster.node(2);
    String key = cluster.keyOwnedBy(target, "relay", "t:");
    String hashKey = "relay_" + key;
    RateLimitRequest hit =
        RateLimitRequest.builder("relay", key).hits(1).limit(10).duration(600_000).build();
    target.check(hit);
    TokenBucketState own = (TokenBucketState) target.store().get(hashKey).orElseThrow();
    TokenBucketState first =
        new TokenBucketState(
            own.status(), own.limit(), own.duration(), 7, own.createdAt(), own.expireAt());
    TokenBucketState second =
        new TokenBucketState(
            own.status(), own.limit(), own.duration(), 5, own.createdAt(), own.expireAt());

    peer(target).transferBuckets(transfer(sender.address(), null, hashKey, first));
    assertThat(remaining(target, hashKey)).as("a first snapshot: the more consumed").isEqualTo(7);
    target.check(hit);
    assertThat(
            peer(via)
                .transferBuckets(transfer(sender.address(), target.address(), hashKey, second))
                .getAccepted())
        .isEqualTo(1);
    assertThat(remaining(target, hashKey))
        .as("the sender's 2 hits since its first snapshot added to the target's own")
        .isEqualTo(4);
    peer(via).transferBuckets(transfer(sender.address(), target.address(), hashKey, second));
    peer(target).transferBuckets(transfer(sender.address(), null, hashKey, second));

    assertThat(remaining(target, hashKey))
        .as("retries, relayed and direct, add nothing")
        .isEqualTo(4);
    assertThat(via.transfersRelayed()).isEqualTo(2);
    assertThat(via.store().get(hashKey)).as("not stored by the relaying node").isEmpty();
  }

  @Test
  void relayedTransfer_toANonMemberOrItself_refused() {
    Node via = cluster.node(1);
    String hashKey = "relay_k";
    TokenBucketState state =
        new TokenBucketState(
            dev.weir.core.model.Status.UNDER_LIMIT,
            10,
            600_000,
            5,
            System.currentTimeMillis(),
            System.currentTimeMillis() + 600_000);

    StatusRuntimeException toStranger =
        catchThrowableOfType(
            StatusRuntimeException.class,
            () ->
                peer(via)
                    .transferBuckets(
                        transfer(cluster.node(0).address(), "127.0.0.1:1", hashKey, state)));
    StatusRuntimeException toItself =
        catchThrowableOfType(
            StatusRuntimeException.class,
            () ->
                peer(via)
                    .transferBuckets(
                        transfer(cluster.node(0).address(), via.address(), hashKey, state)));

    assertThat(toStranger.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(toStranger.getStatus().getDescription())
        .isEqualTo("field 'weir_relay_to' (127.0.0.1:1) is not a member of this node's cluster");
    assertThat(toItself.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(toItself.getStatus().getDescription()).contains("names this node");
    assertThat(via.store().get(hashKey)).isEmpty();
  }
}
