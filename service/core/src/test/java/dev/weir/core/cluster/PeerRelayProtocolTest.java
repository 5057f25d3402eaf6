package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.cluster.peer.auth.PeerSecurity;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.testkit.LocalCluster.Node;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.PeersV1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Weir's {@code weir_relay_to} on a real three-node cluster: a relaying node sends the call on to
 * its target, which answers as the owner (a relayed call is not relayed again), and refuses a
 * target that is not a member other than itself, or that it finds down, with {@code
 * FAILED_PRECONDITION} (never {@code UNAVAILABLE}, which would take the relaying node down at the
 * caller).
 */
class PeerRelayProtocolTest {

  private LocalCluster cluster;
  private ManagedChannel channel;

  @BeforeEach
  void start() {
    cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS);
  }

  @AfterEach
  void stop() throws InterruptedException {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    cluster.close();
  }

  private PeersV1Grpc.PeersV1BlockingStub peer(Node node) {
    channel = PeerSecurity.sharedSecret(cluster.secret()).channel(node.address());
    return PeersV1Grpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);
  }

  private static GetPeerRateLimitsReq relay(String target, String key) {
    return GetPeerRateLimitsReq.newBuilder()
        .setWeirRelayTo(target)
        .addRequests(
            PeerProtos.toProto(
                RateLimitRequest.builder("relay", key)
                    .hits(1)
                    .limit(5)
                    .duration(600_000)
                    .build()
                    .withCreatedAt(System.currentTimeMillis())))
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
}
