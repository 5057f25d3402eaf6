package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.cluster.peer.auth.PeerSecurity;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.LocalCluster.Node;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.time.SystemClock;
import dev.weir.proto.gubernator.AnnounceReq;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.PeersV1Grpc;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.TokenBucketSnapshot;
import dev.weir.proto.gubernator.TransferBucketsReq;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import dev.weir.proto.gubernator.UpdatePeerGlobalsReq;
import dev.weir.ring.HashRing;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.time.ZoneOffset;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The attacks of issue 14 against a real three-node cluster on loopback: a stranger who reaches a
 * node's peer port forges a departure notice or floods it with forged state. Without authentication
 * the forged notice splits a limit (reproduced here); with the cluster's defaults it is refused,
 * and forged state from a caller that does hold the secret is refused item by item.
 */
class PeerProtocolAttackTest {

  private static final String NAME = "attack";
  private static final long LIMIT = 5;

  private LocalCluster cluster;
  private ManagedChannel channel;

  @AfterEach
  void stop() throws InterruptedException {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  private static RateLimitRequest hit(String key, long hits) {
    return RateLimitRequest.builder(NAME, key).hits(hits).limit(LIMIT).duration(600_000).build();
  }

  private LocalCluster start(PeerSecurity security) {
    RateLimitEngine engine = new RateLimitEngine(ZoneOffset.UTC);
    return LocalCluster.start(
        3,
        ClusterForwardingTest.SETTINGS,
        SystemClock.INSTANCE,
        store -> new LocalLimiter(engine, store, SystemClock.INSTANCE)::decide,
        security);
  }

  /** Returns a key owned by node 1, so that node 0 forwards it. */
  private String keyOwnedBySecondNode() {
    return cluster.keyOwnedBy(cluster.node(1), NAME, "account:");
  }

  /** Opens a stranger's plaintext channel to {@code node}'s peer listener, sending no secret. */
  private PeersV1Grpc.PeersV1BlockingStub stranger(Node node) {
    channel = ManagedChannelBuilder.forTarget(node.address()).usePlaintext().build();
    return PeersV1Grpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);
  }

  /** Opens a channel to {@code node}'s peer listener that carries the cluster's credentials. */
  private PeersV1Grpc.PeersV1BlockingStub insider(Node node) {
    channel = PeerSecurity.sharedSecret(cluster.secret()).channel(node.address());
    return PeersV1Grpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);
  }

  /**
   * Sends 20 hits of {@code key} round-robin over the three nodes; returns how many were admitted.
   */
  private long admittedOfTwenty(String key) {
    return IntStream.range(0, 20)
        .mapToObj(i -> cluster.node(i % 3).check(hit(key, 1)).get(0))
        .filter(r -> r.error().isEmpty() && r.status() == Status.UNDER_LIMIT)
        .count();
  }

  private static void assertRefused(Runnable call, Code code) {
    assertThatThrownBy(call::run)
        .isInstanceOfSatisfying(
            StatusRuntimeException.class, e -> assertThat(e.getStatus().getCode()).isEqualTo(code));
  }

  @Test
  void forgedLeave_insecurePeerProtocol_dropsAPeerAndALimitOf5Admits10Of20() {
    cluster = start(PeerSecurity.insecure());

    stranger(cluster.node(0))
        .announce(
            AnnounceReq.newBuilder()
                .setAddress(cluster.node(1).address())
                .setLeaving(true)
                .build());

    HashRing atFirst = cluster.node(0).cluster().membership().ring();
    HashRing atThird = cluster.node(2).cluster().membership().ring();
    assertThat(atFirst.peers()).hasSize(2);
    // A key the first node now takes over itself, counting it beside the second node (a key it
    // sends to the third is handed on to the second, which still owns it there).
    String key =
        IntStream.range(0, 10_000)
            .mapToObj(i -> "account:" + i)
            .filter(k -> atThird.ownerOf(NAME + "_" + k).equals(cluster.node(1).address()))
            .filter(k -> atFirst.ownerOf(NAME + "_" + k).equals(cluster.node(0).address()))
            .findFirst()
            .orElseThrow();
    assertThat(admittedOfTwenty(key)).isEqualTo(10);
  }

  @Test
  void forgedLeave_withoutTheSecret_unauthenticatedRingUnchangedLimitHolds() {
    cluster = start(null);
    String key = keyOwnedBySecondNode();

    assertRefused(
        () ->
            stranger(cluster.node(0))
                .announce(
                    AnnounceReq.newBuilder()
                        .setAddress(cluster.node(1).address())
                        .setLeaving(true)
                        .build()),
        Code.UNAUTHENTICATED);

    assertThat(cluster.node(0).cluster().membership().ring().peers()).hasSize(3);
    assertThat(admittedOfTwenty(key)).isEqualTo(LIMIT);
    assertThat(cluster.node(0).metrics().count("refused peer_unauthenticated")).isEqualTo(1);
    assertThat(cluster.node(0).callsReceived("Announce")).isZero();
  }

  @Test
  void forgedState_withoutTheSecret_everyCallUnauthenticated() {
    cluster = start(null);
    Node target = cluster.node(0);
    PeersV1Grpc.PeersV1BlockingStub stub = stranger(target);

    assertRefused(
        () ->
            stub.updatePeerGlobals(
                UpdatePeerGlobalsReq.newBuilder().addGlobals(garbage("k")).build()),
        Code.UNAUTHENTICATED);
    assertRefused(
        () ->
            stub.transferBuckets(
                TransferBucketsReq.newBuilder()
                    .setFrom(cluster.node(1).address())
                    .addBuckets(fullBucket(NAME + "_k"))
                    .build()),
        Code.UNAUTHENTICATED);

    assertThat(target.store().size()).isZero();
    assertThat(target.metrics().count("refused peer_unauthenticated")).isEqualTo(2);
  }

  @Test
  void relayedTransfer_withoutTheSecret_unauthenticatedAndNothingReachesTheTarget() {
    cluster = start(null);
    Node via = cluster.node(1);
    Node target = cluster.node(2);
    PeersV1Grpc.PeersV1BlockingStub stub = stranger(via);

    assertRefused(
        () ->
            stub.transferBuckets(
                TransferBucketsReq.newBuilder()
                    .setFrom(cluster.node(0).address())
                    .setWeirRelayTo(target.address())
                    .addBuckets(fullBucket(NAME + "_k"))
                    .build()),
        Code.UNAUTHENTICATED);

    assertThat(target.callsReceived("TransferBuckets")).isZero();
    assertThat(target.store().size()).isZero();
    assertThat(via.transfersRelayed()).isZero();
  }

  @Test
  void forgedGarbage_fromACallerWithTheSecret_refusedAndTheNodesStateUnchanged() {
    cluster = start(null);
    Node target = cluster.node(0);
    String key = "account:garbage";
    String hashKey = NAME + "_" + key;
    target.cluster().service().decideAsOwner(List.of(hit(key, 2)));
    long storedBefore = target.store().size();
    PeersV1Grpc.PeersV1BlockingStub stub = insider(target);

    UpdatePeerGlobalsReq.Builder flood = UpdatePeerGlobalsReq.newBuilder();
    for (int i = 0; i < 20_000; i++) {
      flood.addGlobals(garbage("flood-" + i));
    }
    assertRefused(() -> stub.updatePeerGlobals(flood.build()), Code.OUT_OF_RANGE);
    stub.updatePeerGlobals(
        UpdatePeerGlobalsReq.newBuilder()
            .addGlobals(garbage(""))
            .addGlobals(garbage(hashKey))
            .addGlobals(
                garbage(hashKey).toBuilder()
                    .setStatus(
                        RateLimitResp.newBuilder()
                            .setLimit(LIMIT)
                            .setRemaining(LIMIT)
                            .setResetTime(Long.MAX_VALUE)))
            .addGlobals(garbage(hashKey).toBuilder().setCreatedAt(Long.MIN_VALUE))
            .build());
    int accepted =
        stub.transferBuckets(
                TransferBucketsReq.newBuilder()
                    .setFrom(cluster.node(1).address())
                    .addBuckets(fullBucket(""))
                    .addBuckets(fullBucket(hashKey))
                    .addBuckets(
                        fullBucket(hashKey).toBuilder()
                            .setTokenBucket(
                                fullBucket(hashKey).getTokenBucket().toBuilder()
                                    .setRemaining(Long.MIN_VALUE)
                                    .setExpireAt(Long.MIN_VALUE)))
                    .build())
            .getAccepted();
    assertRefused(
        () ->
            stub.announce(
                AnnounceReq.newBuilder().setAddress(target.address()).setLeaving(true).build()),
        Code.INVALID_ARGUMENT);
    assertRefused(
        () -> stub.announce(AnnounceReq.newBuilder().setAddress("").setLeaving(true).build()),
        Code.INVALID_ARGUMENT);

    RateLimitResponse after = target.cluster().service().decideAsOwner(List.of(hit(key, 0))).get(0);
    assertThat(accepted).isZero();
    assertThat(after.remaining()).isEqualTo(LIMIT - 2);
    assertThat(target.store().size()).isEqualTo(storedBefore);
    assertThat(target.cluster().membership().ring().peers()).hasSize(3);
    assertThat(target.metrics().count("refused too_many_items")).isEqualTo(1);
    assertThat(target.metrics().count("refused peer_invalid_input")).isEqualTo(4 + 3 + 2);
  }

  /** A GLOBAL update no owner sends: a negative remaining (Long.MIN) of a limit of 5. */
  private static UpdatePeerGlobal garbage(String hashKey) {
    return UpdatePeerGlobal.newBuilder()
        .setKey(hashKey)
        .setAlgorithmValue(0)
        .setDuration(600_000)
        .setStatus(
            RateLimitResp.newBuilder()
                .setLimit(LIMIT)
                .setRemaining(Long.MIN_VALUE)
                .setResetTime(System.currentTimeMillis() + 600_000))
        .build();
  }

  /** A handed-over token bucket for {@code hashKey} with a negative remaining (Long.MIN). */
  private static BucketSnapshot fullBucket(String hashKey) {
    long now = System.currentTimeMillis();
    return BucketSnapshot.newBuilder()
        .setKey(hashKey)
        .setTokenBucket(
            TokenBucketSnapshot.newBuilder()
                .setLimit(LIMIT)
                .setDuration(600_000)
                .setRemaining(Long.MIN_VALUE)
                .setCreatedAt(now)
                .setExpireAt(now + 600_001))
        .build();
  }
}
