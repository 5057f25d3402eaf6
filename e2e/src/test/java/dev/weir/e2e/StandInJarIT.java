package dev.weir.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.testkit.Await;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two {@code weir.jar} processes; one is paused ({@code SIGSTOP}, a long GC pause) while Envoy's
 * calls reach the other: with {@code WEIR_FORWARD_STAND_IN_AFTER}, the paused node's keys are still
 * decided, and limited, within a deadline far shorter than the forwarding deadline.
 */
class StandInJarIT {

  private static final String RULES =
      """
      domain: edge
      descriptors:
        - key: user
          rate_limit: {unit: hour, requests_per_unit: 1}
      """;

  @TempDir Path dir;
  private final HttpClient http = HttpClient.newHttpClient();
  private final List<NodeProcess> nodes = new ArrayList<>();
  private ManagedChannel channel;

  @AfterEach
  void stop() throws Exception {
    // SIGKILL ends a stopped process too, so no SIGCONT first (which fails for a node that has
    // exited and would leave the others running); every node is killed whatever else fails.
    try {
      nodes.forEach(NodeProcess::close);
    } finally {
      if (channel != null) {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  @Test
  void ownerPaused_itsKeysAnsweredByTheStandInAndStillLimited() throws Exception {
    Files.writeString(dir.resolve("edge.yaml"), RULES);
    int[] grpc = {NodeProcess.freePort(), NodeProcess.freePort()};
    int[] httpPorts = {NodeProcess.freePort(), NodeProcess.freePort()};
    int[] peer = {NodeProcess.freePort(), NodeProcess.freePort()};
    String peers = NodeProcess.staticPeers(grpc, peer);
    for (int i = 0; i < 2; i++) {
      nodes.add(
          NodeProcess.startMember(
              grpc[i],
              httpPorts[i],
              peer[i],
              Map.of(
                  "WEIR_STATIC_PEERS", peers,
                  "WEIR_ENVOY_CONFIG", dir.toString(),
                  // The owner's deadline, far beyond the 2 s callers give each call below.
                  "WEIR_BATCH_TIMEOUT", "20s",
                  "WEIR_FORWARD_STAND_IN_AFTER", "10ms")));
    }
    for (NodeProcess n : nodes) {
      n.awaitHealthy(http);
    }
    channel = NettyChannelBuilder.forAddress("127.0.0.1", grpc[0]).usePlaintext().build();
    // Node 0 may have found node 1 down while it was starting; it owns keys again once back on the ring.
    Await.until(
        Duration.ofSeconds(30),
        () -> metric(httpPorts[0], "weir_peers") == 2,
        "node 1 on node 0's ring");

    nodes.get(1).signal("STOP");
    List<Code> first = new ArrayList<>();
    List<Code> second = new ArrayList<>();
    // Values that differ from their first character: FNV-1a (the ring's hash, as Gubernator's) puts
    // keys that share all but their last characters close together on the ring, often on one node.
    for (int i = 0; i < 20; i++) {
      String user = UUID.nameUUIDFromBytes(("user-" + i).getBytes(StandardCharsets.UTF_8)).toString();
      first.add(shouldRateLimit(user));
      second.add(shouldRateLimit(user));
    }

    assertThat(first).as("each user's first request").containsOnly(Code.OK);
    assertThat(second).as("each user's second request").containsOnly(Code.OVER_LIMIT);
    assertThat(metric(httpPorts[0], "weir_forward_stand_ins_total"))
        .as(
            "the paused node's share of the 20 users (1 in 2^20 that it owns none); node 0's ring"
                + " has %s peers, its /metrics: %s",
            metric(httpPorts[0], "weir_peers"),
            metricsLines(httpPorts[0], "weir_peer"))
        .isPositive();
  }

  /** Returns the overall code node 0 answers within 2 s for one request of {@code user}. */
  private Code shouldRateLimit(String user) {
    return RateLimitServiceGrpc.newBlockingStub(channel)
        .withDeadlineAfter(2, TimeUnit.SECONDS)
        .shouldRateLimit(
            RateLimitRequest.newBuilder()
                .setDomain("edge")
                .addDescriptors(
                    RateLimitDescriptor.newBuilder()
                        .addEntries(
                            RateLimitDescriptor.Entry.newBuilder().setKey("user").setValue(user)))
                .build())
        .getOverallCode();
  }

  /** Returns the lines of the node's {@code /metrics} that start with {@code prefix}. */
  private String metricsLines(int httpPort, String prefix) {
    return scrape(httpPort)
        .lines()
        .filter(l -> l.startsWith(prefix))
        .collect(java.util.stream.Collectors.joining("; "));
  }

  /** Returns the value of the unlabelled meter {@code name} on the node's {@code /metrics}. */
  private double metric(int httpPort, String name) {
    String body = scrape(httpPort);
    Matcher m = Pattern.compile("(?m)^" + name + "(?:\\{[^}]*\\})? (\\S+)$").matcher(body);
    assertThat(m.find()).as(name + " in /metrics").isTrue();
    return Double.parseDouble(m.group(1));
  }

  private String scrape(int httpPort) {
    try {
      return http.send(
              HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/metrics"))
                  .timeout(Duration.ofSeconds(2))
                  .build(),
              HttpResponse.BodyHandlers.ofString())
          .body();
    } catch (Exception e) {
      throw new IllegalStateException("cannot read /metrics", e);
    }
  }
}
