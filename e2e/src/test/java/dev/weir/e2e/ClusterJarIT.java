package dev.weir.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.client.WeirClient;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.HealthCheckReq;
import dev.weir.proto.gubernator.HealthCheckResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.Status;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Starts three {@code weir.jar} processes as one static cluster and checks limits hold
 * cluster-wide.
 */
class ClusterJarIT {

  private static final int NODES = 3;
  /** A forwarding deadline three JVMs on a loaded two-core CI box meet (the default is 500 ms). */
  private static final String FORWARD_DEADLINE = "5s";
  /** Each call's own deadline, counted from the call (not from the stub's creation). */
  private static final Duration CALL_DEADLINE = Duration.ofSeconds(30);

  private final HttpClient http = HttpClient.newHttpClient();
  private final List<NodeProcess> nodes = new ArrayList<>();
  private final List<ManagedChannel> channels = new ArrayList<>();
  private final int[] peerPorts = new int[NODES];
  private String peers;

  private void startCluster() throws Exception {
    int[] grpc = new int[NODES];
    int[] httpPorts = new int[NODES];
    for (int i = 0; i < NODES; i++) {
      grpc[i] = NodeProcess.freePort();
      httpPorts[i] = NodeProcess.freePort();
      peerPorts[i] = NodeProcess.freePort();
    }
    peers = NodeProcess.staticPeers(grpc, peerPorts);
    for (int i = 0; i < NODES; i++) {
      nodes.add(
          NodeProcess.startMember(
              grpc[i],
              httpPorts[i],
              peerPorts[i],
              Map.of("WEIR_STATIC_PEERS", peers, "WEIR_BATCH_TIMEOUT", FORWARD_DEADLINE)));
    }
    for (NodeProcess n : nodes) {
      n.awaitHealthy(http);
      ManagedChannel ch =
          NettyChannelBuilder.forAddress("127.0.0.1", n.grpcPort).usePlaintext().build();
      channels.add(ch);
    }
  }

  /**
   * Returns a stub for node {@code i} whose calls each get {@link #CALL_DEADLINE} from now: a
   * stub's {@code withDeadlineAfter} fixes one instant, so a stub kept for the whole test would
   * give the later calls of a long test less and less time, and none at all after it.
   */
  private V1Grpc.V1BlockingStub stub(int i) {
    return V1Grpc.newBlockingStub(channels.get(i))
        .withDeadlineAfter(CALL_DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
  }

  @AfterEach
  void stop() throws Exception {
    for (ManagedChannel ch : channels) {
      ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    nodes.forEach(NodeProcess::close);
  }

  private static GetRateLimitsReq request(String key, long limit) {
    return GetRateLimitsReq.newBuilder()
        .addRequests(
            RateLimitReq.newBuilder()
                .setName("e2e_cluster")
                .setUniqueKey(key)
                .setHits(1)
                .setLimit(limit)
                .setDuration(600_000))
        .build();
  }

  @Test
  void cluster_limitHoldsWhicheverNodeIsAsked() throws Exception {
    startCluster();
    for (int i = 0; i < NODES; i++) {
      HealthCheckResp health = stub(i).healthCheck(HealthCheckReq.getDefaultInstance());
      assertThat(health.getStatus()).isEqualTo("healthy");
      assertThat(health.getPeerCount()).isEqualTo(NODES);
    }

    int limit = 10;
    int admitted = 0;
    Set<String> owners = new HashSet<>();
    for (int i = 0; i < 3 * limit; i++) {
      RateLimitResp r =
          stub(i % NODES).getRateLimits(request("shared", limit)).getResponses(0);
      assertThat(r.getError()).isEmpty();
      if (r.getStatus() == Status.UNDER_LIMIT) {
        admitted++;
      }
      owners.add(r.getMetadataOrDefault("owner", "self"));
    }

    assertThat(admitted).isEqualTo(limit);
    assertThat(owners)
        .as("two nodes forward, the owner answers itself")
        .hasSize(2)
        .contains("self");
  }

  /**
   * A client that asks a node for the ring ({@code weir.v1.Ring}) and sends each check to its owner
   * gets every answer from the owner itself: the nodes forward nothing, and the limit holds.
   */
  @Test
  void cluster_clientSendingToOwners_everyAnswerComesFromTheOwner() throws Exception {
    startCluster();
    List<String> members = new ArrayList<>();
    for (NodeProcess n : nodes) {
      members.add("127.0.0.1:" + n.grpcPort);
    }
    try (WeirClient client =
        WeirClient.builder()
            .target(members.get(0))
            .sendToOwners()
            .deadline(Duration.ofSeconds(30))
            .build()) {
      client.refreshRing().join();
      List<CompletableFuture<RateLimitResp>> checks = new ArrayList<>();
      for (int i = 0; i < 30; i++) {
        checks.add(client.check(request("shared", 10).getRequests(0)));
        checks.add(client.check(request("key:" + i, 10).getRequests(0)));
      }
      List<RateLimitResp> answers = checks.stream().map(CompletableFuture::join).toList();

      assertThat(client.ringMembers()).containsExactlyInAnyOrderElementsOf(members);
      assertThat(answers).allMatch(r -> r.getError().isEmpty());
      assertThat(answers).noneMatch(r -> r.containsMetadata("owner"));
      assertThat(answers)
          .filteredOn(r -> r.getStatus() == Status.UNDER_LIMIT)
          .as("30 distinct keys and 10 of the shared one")
          .hasSize(40);
    }
  }

  @Test
  void cluster_nodeRestartedWithSigterm_countsHandedOffAndBack() throws Exception {
    startCluster();
    int limit = 10;
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      keys.add("restart-" + Integer.toHexString(i * 7919));
    }
    for (String key : keys) {
      for (int h = 0; h < 4; h++) {
        stub(0).getRateLimits(request(key, limit));
      }
    }

    NodeProcess restarted = nodes.get(2);
    int grpcPort = restarted.grpcPort;
    int httpPort = restarted.httpPort;
    String startedLine =
        restarted
            .stdout()
            .lines()
            .filter(l -> l.contains("Weir node started"))
            .findFirst()
            .orElseThrow();
    assertThat(startedLine).contains("handoff=true");
    assertThat(restarted.terminate(Duration.ofSeconds(30))).isEqualTo(143);
    assertThat(restarted.stdout()).contains("left the cluster: handed");

    NodeProcess fresh =
        NodeProcess.startMember(
            grpcPort,
            httpPort,
            peerPorts[2],
            Map.of("WEIR_STATIC_PEERS", peers, "WEIR_BATCH_TIMEOUT", FORWARD_DEADLINE));
    nodes.set(2, fresh);
    fresh.awaitHealthy(http);

    for (String key : keys) {
      GetRateLimitsReq query =
          request(key, limit).toBuilder()
              .setRequests(0, request(key, limit).getRequests(0).toBuilder().setHits(0))
              .build();
      RateLimitResp r = pollUntilAnswered(query);
      assertThat(r.getRemaining()).as(key).isEqualTo(limit - 4);
    }
  }

  // The restarted node's peers reconnect to it after their gRPC reconnect backoff: until then an
  // item may carry an error, or the call fail as a whole; either is asked again.
  private RateLimitResp pollUntilAnswered(GetRateLimitsReq query) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    String last;
    do {
      try {
        RateLimitResp r = stub(0).getRateLimits(query).getResponses(0);
        if (r.getError().isEmpty()) {
          return r;
        }
        last = "item error: " + r.getError();
      } catch (StatusRuntimeException e) {
        last = "call failed: " + e.getStatus();
      }
      Thread.sleep(200);
    } while (System.nanoTime() < deadline);
    throw new AssertionError(
        "node 0 did not answer " + query.getRequests(0).getUniqueKey() + " within 30 s: " + last);
  }
}
