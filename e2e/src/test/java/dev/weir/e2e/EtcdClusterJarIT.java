package dev.weir.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.util.JsonFormat;
import dev.weir.core.testkit.TestEtcd;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.HealthCheckResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.Status;
import dev.weir.proto.gubernator.V1Grpc;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Three {@code weir.jar} processes that find each other through a real etcd: {@code WEIR_TEST_ETCD}
 * when set (as {@code .ci/run} does), otherwise an etcd process started here when the binary is on
 * the PATH; skipped with the reason printed otherwise. Each run registers under its own key prefix.
 */
class EtcdClusterJarIT {

  private static final int NODES = 3;
  private static final Duration CONVERGE = Duration.ofSeconds(20);

  private static TestEtcd testEtcd;
  private static String endpoint;

  private final HttpClient http = HttpClient.newHttpClient();
  private final String prefix = "/weir-e2e-" + UUID.randomUUID() + "/";
  private final List<NodeProcess> nodes = new ArrayList<>();
  private final List<ManagedChannel> channels = new ArrayList<>();
  private final List<V1Grpc.V1BlockingStub> stubs = new ArrayList<>();

  @BeforeAll
  static void etcd() throws Exception {
    testEtcd = TestEtcd.forClass(EtcdClusterJarIT.class);
    endpoint = testEtcd.endpoint();
  }

  @AfterAll
  static void stopEtcd() throws Exception {
    if (testEtcd != null) {
      testEtcd.close();
    }
  }

  @AfterEach
  void stopNodes() throws Exception {
    for (ManagedChannel ch : channels) {
      ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    nodes.forEach(NodeProcess::close);
  }

  @Test
  void etcdCluster_formsLimitsClusterWide_andSurvivesOwnerLeaving() throws Exception {
    startCluster();
    for (NodeProcess node : nodes) {
      awaitHealth(node, NODES);
    }
    assertThat(registered()).containsExactlyInAnyOrderElementsOf(addresses(nodes));

    int limit = 10;
    int admitted = 0;
    Set<String> owners = new HashSet<>();
    for (int i = 0; i < 15; i++) {
      RateLimitResp r = hit(stubs.get(i % NODES));
      if (r.getStatus() == Status.UNDER_LIMIT) {
        admitted++;
      }
      owners.add(r.getMetadataOrDefault("owner", "self"));
    }
    assertThat(admitted).isEqualTo(limit);
    assertThat(owners).as("two nodes forward to one owner, which answers itself").hasSize(2);
    assertThat(owners).contains("self");
    String owner = owners.stream().filter(o -> !o.equals("self")).findFirst().orElseThrow();
    int ownerIndex = indexOf(owner);

    NodeProcess leaving = nodes.get(ownerIndex);
    assertThat(leaving.terminate(Duration.ofSeconds(30))).isEqualTo(143);
    assertThat(leaving.stdout()).contains("left the cluster: handed 1 buckets");
    List<Integer> rest = IntStream.range(0, NODES).filter(i -> i != ownerIndex).boxed().toList();
    assertThat(registered())
        .as("the lease is revoked before exit, not left to expire")
        .containsExactlyInAnyOrderElementsOf(addresses(rest.stream().map(nodes::get).toList()));

    for (int i : rest) {
      awaitHealth(nodes.get(i), NODES - 1);
    }
    for (int i : rest) {
      RateLimitResp r = hit(stubs.get(i));
      assertThat(r.getStatus()).as("node %d after the owner left", i).isEqualTo(Status.OVER_LIMIT);
      assertThat(r.getRemaining()).isZero();
    }
  }

  // A cold peer JVM on a busy machine can take longer than the 500 ms default to answer its first
  // forwarded batch; this test is about discovery, so forwarding gets a generous timeout.
  private void startCluster() throws Exception {
    for (int i = 0; i < NODES; i++) {
      int grpcPort = NodeProcess.freePort();
      nodes.add(
          NodeProcess.startMember(
              grpcPort,
              NodeProcess.freePort(),
              NodeProcess.freePort(),
              Map.of(
                  "WEIR_PEER_DISCOVERY_TYPE",
                  "etcd",
                  "WEIR_ETCD_ENDPOINTS",
                  endpoint,
                  "WEIR_ETCD_KEY_PREFIX",
                  prefix,
                  "WEIR_ETCD_LEASE_TTL",
                  "5s",
                  "WEIR_BATCH_TIMEOUT",
                  "5s",
                  "WEIR_ADVERTISE_ADDRESS",
                  "127.0.0.1:" + grpcPort)));
    }
    for (NodeProcess node : nodes) {
      node.awaitHealthy(http);
      ManagedChannel ch =
          NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort).usePlaintext().build();
      channels.add(ch);
      stubs.add(V1Grpc.newBlockingStub(ch));
    }
  }

  /** Polls {@code GET /v1/HealthCheck} until the node is healthy with {@code peers} peers. */
  private void awaitHealth(NodeProcess node, int peers) throws Exception {
    HttpRequest request = HttpRequest.newBuilder(node.httpUri("/v1/HealthCheck")).build();
    long deadline = System.nanoTime() + CONVERGE.toNanos();
    String last = "";
    while (System.nanoTime() < deadline) {
      HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
      last = response.statusCode() + " " + response.body();
      if (response.statusCode() == 200) {
        HealthCheckResp.Builder health = HealthCheckResp.newBuilder();
        JsonFormat.parser().ignoringUnknownFields().merge(response.body(), health);
        if (health.getStatus().equals("healthy") && health.getPeerCount() == peers) {
          return;
        }
      }
      Thread.sleep(100);
    }
    throw new AssertionError(
        "node on gRPC port " + node.grpcPort + " did not report " + peers + " healthy peers within "
            + CONVERGE + "; last answer: " + last + "\n" + node.stdout() + node.stderr());
  }

  /** Returns the addresses registered under this run's prefix, with a lease each. */
  private List<String> registered() throws Exception {
    try (Client client = Client.builder().endpoints(endpoint).build()) {
      List<KeyValue> kvs =
          client
              .getKVClient()
              .get(bytes(prefix), GetOption.builder().isPrefix(true).build())
              .get(10, TimeUnit.SECONDS)
              .getKvs();
      List<String> addresses = new ArrayList<>();
      for (KeyValue kv : kvs) {
        assertThat(kv.getLease()).isNotZero();
        addresses.add(kv.getKey().toString(StandardCharsets.UTF_8).substring(prefix.length()));
      }
      return addresses;
    }
  }

  private static List<String> addresses(List<NodeProcess> processes) {
    return processes.stream().map(n -> "127.0.0.1:" + n.grpcPort).toList();
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }

  private RateLimitResp hit(V1Grpc.V1BlockingStub stub) {
    GetRateLimitsReq request =
        GetRateLimitsReq.newBuilder()
            .addRequests(
                RateLimitReq.newBuilder()
                    .setName("e2e_etcd")
                    .setUniqueKey("shared")
                    .setHits(1)
                    .setLimit(10)
                    .setDuration(600_000))
            .build();
    RateLimitResp r =
        stub.withDeadlineAfter(10, TimeUnit.SECONDS).getRateLimits(request).getResponses(0);
    assertThat(r.getError()).isEmpty();
    return r;
  }

  private int indexOf(String address) {
    for (int i = 0; i < NODES; i++) {
      if (address.equals("127.0.0.1:" + nodes.get(i).grpcPort)) {
        return i;
      }
    }
    throw new AssertionError("owner " + address + " is none of the nodes");
  }
}
