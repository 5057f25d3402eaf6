package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.peer.auth.PeerSecret;
import dev.weir.core.cluster.peer.auth.PeerSettings;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FreePorts;
import dev.weir.core.testkit.RingKeys;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.V1Grpc;
import dev.weir.ring.HashRing;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Readiness against Gubernator's {@code HealthCheck} on a node whose one static peer never started:
 * {@code GET /readyz} and gRPC health say the node can answer, {@code HealthCheck} reports the peer
 * as Gubernator would, every decision is answered, and only draining makes the node not ready.
 */
class ReadinessTest {

  private final HttpClient http = HttpClient.newHttpClient();
  private WeirNode node;
  private ManagedChannel channel;
  private String ghost;

  @AfterEach
  void stop() throws Exception {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (node != null) {
      node.close();
    }
  }

  private void startWithPeerThatNeverStarted() throws Exception {
    int grpcPort = FreePorts.next();
    int peerPort = FreePorts.next();
    ghost = "127.0.0.1:" + FreePorts.next();
    String ghostEntry = ghost + "@" + FreePorts.next();
    WeirConfig config = TestConfigs.loopback(grpcPort);
    node =
        WeirNode.builder(config)
            .cluster(
                ClusterSettings.defaults()
                    .withStaticPeers(
                        List.of("127.0.0.1:" + grpcPort + "@" + peerPort, ghostEntry)))
            .peers(
                new PeerSettings(
                    new HostPort("127.0.0.1", peerPort),
                    Optional.of(PeerSecret.of("readiness-test-peer-secret")),
                    Optional.empty(),
                    Optional.empty(),
                    false))
            .start();
    channel = NettyChannelBuilder.forAddress("127.0.0.1", grpcPort).usePlaintext().build();
  }

  @Test
  void peerNeverStarted_readyAndServingWhileHealthCheckReportsThePeer() throws Exception {
    startWithPeerThatNeverStarted();
    Await.until(
        Duration.ofSeconds(5),
        () -> node.cluster().liveness().isDown(ghost),
        "the peer is found down");
    node.refreshHealth();

    HttpResponse<String> ready = get("/readyz");
    HttpResponse<String> healthCheck = get("/v1/HealthCheck");
    ServingStatus grpcHealth =
        HealthGrpc.newBlockingStub(channel)
            .check(HealthCheckRequest.getDefaultInstance())
            .getStatus();

    assertThat(ready.statusCode()).isEqualTo(200);
    assertThat(ready.body())
        .startsWith("{\"ready\":true,\"components\":[")
        .contains(
            "{\"name\":\"discovery\",\"healthy\":true,\"gates_readiness\":true,"
                + "\"message\":\"\"}")
        .contains("{\"name\":\"peers\",\"healthy\":false,\"gates_readiness\":false,")
        .contains("peer '" + ghost + "' is down");
    assertThat(grpcHealth).isEqualTo(ServingStatus.SERVING);
    assertThat(healthCheck.statusCode()).isEqualTo(503);
    assertThat(healthCheck.body()).contains("peer '" + ghost + "' is down");
  }

  @Test
  void peerNeverStarted_everyDecisionAnswered() throws Exception {
    startWithPeerThatNeverStarted();
    ClusterSettings defaults = ClusterSettings.defaults();
    HashRing withGhost =
        HashRing.of(
            List.of(node.advertiseAddress().toString(), ghost),
            defaults.replicas(),
            defaults.hash());
    // Half of the keys are the ghost's while it is on the ring.
    List<String> keys = RingKeys.split(withGhost, "n", "key-", ghost, 25, 25);
    GetRateLimitsReq.Builder request = GetRateLimitsReq.newBuilder();
    for (String key : keys) {
      request.addRequests(
          RateLimitReq.newBuilder()
              .setName("n")
              .setUniqueKey(key)
              .setHits(1)
              .setLimit(5)
              .setDuration(60_000));
    }

    GetRateLimitsResp answers =
        V1Grpc.newBlockingStub(channel)
            .withDeadlineAfter(10, TimeUnit.SECONDS)
            .getRateLimits(request.build());

    assertThat(answers.getResponsesList()).extracting(RateLimitResp::getError).containsOnly("");
  }

  @Test
  void close_draining_readyzFailsWithShuttingDown() throws Exception {
    startWithPeerThatNeverStarted();
    Thread closer = new Thread(node::close);

    closer.start();
    Await.until(
        Duration.ofSeconds(5), () -> !node.health().ready(), "readiness fails when draining");
    String report = ReadinessRoute.json(node.health().report());
    closer.join();

    assertThat(report)
        .startsWith("{\"ready\":false,")
        .contains(
            "{\"name\":\"draining\",\"healthy\":false,\"gates_readiness\":true,"
                + "\"message\":\"shutting down\"}");
  }

  private HttpResponse<String> get(String path) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort() + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
