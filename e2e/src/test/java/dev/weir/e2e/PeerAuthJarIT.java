package dev.weir.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.proto.gubernator.AnnounceReq;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.HealthCheckReq;
import dev.weir.proto.gubernator.PeersV1Grpc;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.Status;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.net.http.HttpClient;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 14's attack on three {@code weir.jar} processes: anyone who reaches a node's peer port
 * sends it {@code Announce(leaving)} naming another node. With {@code WEIR_PEER_INSECURE=true} the
 * node drops that peer and a limit of 5 admits 10 of 20 hits; with the cluster's {@code
 * WEIR_PEER_SECRET} the notice is refused, the ring stays whole and the limit holds. The client
 * port does not serve the peer protocol at all.
 */
class PeerAuthJarIT {

  private static final int NODES = 3;
  private static final long LIMIT = 5;

  private final HttpClient http = HttpClient.newHttpClient();
  private final List<NodeProcess> nodes = new ArrayList<>();
  private final List<ManagedChannel> channels = new ArrayList<>();
  private final List<V1Grpc.V1BlockingStub> clients = new ArrayList<>();
  private final int[] grpc = new int[NODES];
  private final int[] peer = new int[NODES];

  @AfterEach
  void stop() throws Exception {
    for (ManagedChannel channel : channels) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    nodes.forEach(NodeProcess::close);
  }

  private void startCluster(Map<String, String> security) throws Exception {
    for (int i = 0; i < NODES; i++) {
      grpc[i] = NodeProcess.freePort();
      peer[i] = NodeProcess.freePort();
    }
    for (int i = 0; i < NODES; i++) {
      Map<String, String> env = new HashMap<>();
      env.put("WEIR_PEER_ADDRESS", "127.0.0.1:" + peer[i]);
      env.put("WEIR_STATIC_PEERS", NodeProcess.staticPeers(grpc, peer));
      env.put("WEIR_BATCH_TIMEOUT", "5s");
      env.putAll(security);
      nodes.add(NodeProcess.start(grpc[i], NodeProcess.freePort(), env));
    }
    for (NodeProcess node : nodes) {
      node.awaitHealthy(http);
      clients.add(V1Grpc.newBlockingStub(channel(node.grpcPort)));
    }
  }

  private ManagedChannel channel(int port) {
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
    channels.add(channel);
    return channel;
  }

  private RateLimitResp check(int node, String key, long hits) {
    return clients
        .get(node)
        .withDeadlineAfter(30, TimeUnit.SECONDS)
        .getRateLimits(
            GetRateLimitsReq.newBuilder()
                .addRequests(
                    RateLimitReq.newBuilder()
                        .setName("peer_auth_e2e")
                        .setUniqueKey(key)
                        .setHits(hits)
                        .setLimit(LIMIT)
                        .setDuration(600_000))
                .build())
        .getResponses(0);
  }

  /** Returns a key node 1 owns, found by probing node 0 with 0 hits. */
  private String keyOwnedBySecondNode() {
    String owner = "127.0.0.1:" + grpc[1];
    for (int i = 0; ; i++) {
      String key = "account:" + i;
      RateLimitResp probe = check(0, key, 0);
      assertThat(probe.getError()).isEmpty();
      if (owner.equals(probe.getMetadataOrDefault("owner", ""))) {
        return key;
      }
    }
  }

  /** The forged notice: node 1 is leaving, sent to {@code port} of node 0 without credentials. */
  private void forgeLeave(int port) {
    PeersV1Grpc.newBlockingStub(channel(port))
        .withDeadlineAfter(30, TimeUnit.SECONDS)
        .announce(
            AnnounceReq.newBuilder().setAddress("127.0.0.1:" + grpc[1]).setLeaving(true).build());
  }

  private long admittedOfTwenty(String key) {
    long admitted = 0;
    for (int i = 0; i < 20; i++) {
      RateLimitResp r = check(i % NODES, key, 1);
      assertThat(r.getError()).isEmpty();
      if (r.getStatus() == Status.UNDER_LIMIT) {
        admitted++;
      }
    }
    return admitted;
  }

  private int peerCount(int node) {
    return clients.get(node).healthCheck(HealthCheckReq.getDefaultInstance()).getPeerCount();
  }

  @Test
  void insecurePeerProtocol_forgedLeave_dropsThePeerAndALimitOf5Admits10Of20() throws Exception {
    startCluster(Map.of("WEIR_PEER_INSECURE", "true"));

    forgeLeave(peer[0]);

    assertThat(peerCount(0)).isEqualTo(2);
    // A key the misled node now counts itself, beside the second node (a key it sends to the third
    // node is handed on from there to the second, which still owns it in the third's ring).
    String second = "127.0.0.1:" + grpc[1];
    String key = null;
    for (int i = 0; key == null; i++) {
      String candidate = "account:" + i;
      if (check(0, candidate, 0).getMetadataOrDefault("owner", "").isEmpty()
          && second.equals(check(2, candidate, 0).getMetadataOrDefault("owner", ""))) {
        key = candidate;
      }
    }
    assertThat(admittedOfTwenty(key)).isEqualTo(10);
  }

  @Test
  void peerSecret_forgedLeave_unauthenticatedRingWholeLimitHolds() throws Exception {
    startCluster(Map.of("WEIR_PEER_SECRET", NodeProcess.PEER_SECRET));
    String key = keyOwnedBySecondNode();

    assertThatThrownBy(() -> forgeLeave(peer[0]))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getCode()).isEqualTo(Code.UNAUTHENTICATED));
    assertThatThrownBy(() -> forgeLeave(grpc[0]))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getCode()).isEqualTo(Code.UNIMPLEMENTED));

    assertThat(peerCount(0)).isEqualTo(NODES);
    assertThat(admittedOfTwenty(key)).isEqualTo(LIMIT);
    assertThat(nodes.get(0).stdout())
        .contains("refused a peer call pb.gubernator.PeersV1/Announce");
  }
}
