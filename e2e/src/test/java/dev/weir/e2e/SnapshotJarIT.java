package dev.weir.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.testkit.Await;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A whole-cluster restart of three {@code weir.jar} processes with {@code WEIR_SNAPSHOT_DIR}, one
 * directory per node as a pod's volume: every node gets SIGTERM at once, three new processes start
 * on the same directories, and every key's remaining reflects the hits taken before.
 */
class SnapshotJarIT {

  private static final int NODES = 3;
  private static final String FORWARD_DEADLINE = "5s";
  private static final int LIMIT = 10;
  private static final int HITS = 4;

  @TempDir Path volumes;

  private final HttpClient http = HttpClient.newHttpClient();
  private final List<NodeProcess> nodes = new ArrayList<>();
  private final List<ManagedChannel> channels = new ArrayList<>();
  private final int[] grpc = new int[NODES];
  private final int[] httpPorts = new int[NODES];
  private final int[] peerPorts = new int[NODES];

  @AfterEach
  void stop() throws Exception {
    closeChannels();
    nodes.forEach(NodeProcess::close);
  }

  private void closeChannels() throws InterruptedException {
    for (ManagedChannel ch : channels) {
      ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    channels.clear();
  }

  // Node i mounts volume (i + shift) % NODES: shift 1 is a pod rescheduled onto another's volume.
  private V1Grpc.V1BlockingStub startCluster(int shift) throws Exception {
    String peers = NodeProcess.staticPeers(grpc, peerPorts);
    for (int i = 0; i < NODES; i++) {
      nodes.add(
          NodeProcess.startMember(
              grpc[i],
              httpPorts[i],
              peerPorts[i],
              Map.of(
                  "WEIR_STATIC_PEERS", peers,
                  "WEIR_BATCH_TIMEOUT", FORWARD_DEADLINE,
                  "WEIR_SNAPSHOT_DIR", volumes.resolve("pod-" + (i + shift) % NODES).toString())));
    }
    for (NodeProcess n : nodes) {
      n.awaitHealthy(http);
    }
    ManagedChannel ch =
        NettyChannelBuilder.forAddress("127.0.0.1", nodes.get(1).grpcPort).usePlaintext().build();
    channels.add(ch);
    return V1Grpc.newBlockingStub(ch).withDeadlineAfter(60, TimeUnit.SECONDS);
  }

  private static GetRateLimitsReq request(String key, long hits) {
    return GetRateLimitsReq.newBuilder()
        .addRequests(
            RateLimitReq.newBuilder()
                .setName("e2e_snapshot")
                .setUniqueKey(key)
                .setHits(hits)
                .setLimit(LIMIT)
                .setDuration(600_000))
        .build();
  }

  private long snapshotFiles(String glob) throws Exception {
    try (Stream<Path> all = Files.walk(volumes)) {
      return all.filter(p -> p.getFileName().toString().matches(glob)).count();
    }
  }

  @ParameterizedTest(name = "volume shift {0}")
  @ValueSource(ints = {0, 1})
  void wholeClusterSigterm_thenStart_countsAreBack(int shift) throws Exception {
    for (int i = 0; i < NODES; i++) {
      grpc[i] = NodeProcess.freePort();
      httpPorts[i] = NodeProcess.freePort();
      peerPorts[i] = NodeProcess.freePort();
    }
    V1Grpc.V1BlockingStub stub = startCluster(0);
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      keys.add("snap-" + Integer.toHexString(i * 7919));
    }
    for (String key : keys) {
      RateLimitResp r = stub.getRateLimits(request(key, HITS)).getResponses(0);
      assertThat(r.getError()).isEmpty();
      assertThat(r.getRemaining()).isEqualTo(LIMIT - HITS);
    }

    closeChannels();
    nodes.forEach(NodeProcess::sigterm);
    for (NodeProcess n : nodes) {
      assertThat(n.terminate(Duration.ofSeconds(60))).as(n.logTail()).isEqualTo(143);
      assertThat(n.stdout()).contains("buckets to snapshot");
    }
    nodes.clear();
    assertThat(snapshotFiles(".*\\.weirsnap")).isEqualTo(NODES);

    stub = startCluster(shift);

    for (String key : keys) {
      RateLimitResp r = stub.getRateLimits(request(key, 0)).getResponses(0);
      assertThat(r.getError()).as(key).isEmpty();
      assertThat(r.getRemaining()).as(key).isEqualTo(LIMIT - HITS);
    }
    assertThat(snapshotFiles(".*\\.weirsnap.*")).as("consumed files deleted").isZero();
    for (NodeProcess n : nodes) {
      assertThat(n.stdout()).contains("restored");
    }
  }

  /**
   * A SIGTERM that arrives while a node starts, after it restored its snapshot (and deleted the
   * file) and while it still joins: the node finishes starting, stops and writes the snapshot
   * again. For that start only, a second static peer accepts connections and never answers, so the
   * join waits out its return-notice deadlines; the starts before and after are alone, so that no
   * key is owned by the silent peer.
   */
  @Test
  void sigtermWhileJoiningAfterTheRestore_theSnapshotIsWrittenAgain() throws Exception {
    try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      int grpcPort = NodeProcess.freePort();
      int httpPort = NodeProcess.freePort();
      int peerPort = NodeProcess.freePort();
      String self = "127.0.0.1:" + grpcPort + "@" + peerPort;
      Map<String, String> alone =
          Map.of(
              "WEIR_STATIC_PEERS", self,
              "WEIR_SNAPSHOT_DIR", volumes.resolve("pod-0").toString());
      Map<String, String> joiningSlowly =
          Map.of(
              "WEIR_STATIC_PEERS",
              self + ",127.0.0.1:" + NodeProcess.freePort() + "@" + silent.getLocalPort(),
              "WEIR_SNAPSHOT_DIR",
              volumes.resolve("pod-0").toString());
      NodeProcess first = NodeProcess.startMember(grpcPort, httpPort, peerPort, alone);
      nodes.add(first);
      first.awaitHealthy(http);
      RateLimitResp taken =
          stubTo(grpcPort).getRateLimits(request("starting", HITS)).getResponses(0);
      assertThat(taken.getRemaining()).as(taken.getError()).isEqualTo(LIMIT - HITS);
      closeChannels();
      first.sigterm();
      assertThat(first.terminate(Duration.ofSeconds(60))).as(first.logTail()).isEqualTo(143);
      assertThat(snapshotFiles(".*\\.weirsnap")).isEqualTo(1);

      NodeProcess second = NodeProcess.startMember(grpcPort, httpPort, peerPort, joiningSlowly);
      nodes.add(second);
      assertThat(
              Await.holdsWithin(
                  Duration.ofSeconds(60), () -> logged(second, "restored 1 live buckets")))
          .as(second.logTail())
          .isTrue();
      second.sigterm();
      assertThat(second.terminate(Duration.ofSeconds(60))).as(second.logTail()).isEqualTo(143);

      assertThat(second.stdout())
          .as("stopped while starting, then wrote the snapshot: " + second.logTail())
          .contains("stop requested while the node starts")
          .contains("wrote 1 buckets to snapshot");
      assertThat(snapshotFiles(".*\\.weirsnap")).isEqualTo(1);
      NodeProcess third = NodeProcess.startMember(grpcPort, httpPort, peerPort, alone);
      nodes.add(third);
      third.awaitHealthy(http);
      RateLimitResp after = stubTo(grpcPort).getRateLimits(request("starting", 0)).getResponses(0);
      assertThat(after.getRemaining()).as(after.getError()).isEqualTo(LIMIT - HITS);
    }
  }

  private static boolean logged(NodeProcess node, String line) {
    try {
      return node.stdout().contains(line);
    } catch (java.io.IOException e) {
      return false;
    }
  }

  private V1Grpc.V1BlockingStub stubTo(int port) {
    ManagedChannel ch = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
    channels.add(ch);
    return V1Grpc.newBlockingStub(ch).withDeadlineAfter(60, TimeUnit.SECONDS);
  }
}
