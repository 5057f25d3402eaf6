package dev.weir.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.e2e.netns.NetLab;
import dev.weir.e2e.netns.NetLab.Fault;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.Status;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Three {@code weir.jar} nodes (a fresh cluster for each fault), each in a network namespace of a
 * {@link NetLab}, under real
 * network faults between them while clients in the root namespace call all three round-robin:
 * failed decisions, readiness, what each key admits during the fault against its limit, and how
 * often each node's ring changed. Figures are printed for docs/reliability.md.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PartitionJarIT {

  private static final int NODES = 3;
  private static final int SUBNET = 41;
  private static final int KEYS = 30;
  private static final long LIMIT = 60;
  private static final Duration FAULT = Duration.ofSeconds(25);
  private static final Duration GRACE = Duration.ofSeconds(2);
  private static final Duration ROUND = Duration.ofMillis(208);
  private static final Pattern RING_CHANGES =
      Pattern.compile("^weir_ring_changes_total(?:\\{[^}]*\\})? (\\S+)$", Pattern.MULTILINE);

  private final HttpClient http = HttpClient.newHttpClient();
  private final List<Process> nodes = new ArrayList<>();
  private final List<ManagedChannel> channels = new ArrayList<>();
  private NetLab lab;
  private Path logs;

  @BeforeEach
  void start() throws Exception {
    String why = NetLab.unavailable();
    if (why != null) {
      System.out.println("PartitionJarIT skipped: " + why);
    }
    Assumptions.assumeTrue(why == null, why);
    lab = NetLab.create(NODES, SUBNET);
    logs = Files.createTempDirectory("weir-partition");
    List<String> peers = new ArrayList<>();
    for (int i = 1; i <= NODES; i++) {
      peers.add(lab.address(i) + ":1051@1052");
    }
    for (int i = 1; i <= NODES; i++) {
      List<String> java = new ArrayList<>();
      java.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      java.addAll(TestJvm.FLAGS);
      java.add("-jar");
      java.add(NodeProcess.jar().toString());
      ProcessBuilder builder =
          new ProcessBuilder(lab.inHost(i, java))
              .redirectErrorStream(true)
              .redirectOutput(logs.resolve("node" + i + ".log").toFile());
      Map<String, String> env = builder.environment();
      env.keySet().removeIf(name -> name.startsWith("WEIR_") || name.startsWith("GUBER_"));
      env.put("WEIR_GRPC_ADDRESS", lab.address(i) + ":1051");
      env.put("WEIR_HTTP_ADDRESS", lab.address(i) + ":1050");
      env.put("WEIR_PEER_ADDRESS", lab.address(i) + ":1052");
      env.put("WEIR_STATIC_PEERS", String.join(",", peers));
      env.put("WEIR_PEER_SECRET", NodeProcess.PEER_SECRET);
      env.put("WEIR_WARMUP", "0s");
      nodes.add(builder.start());
      channels.add(
          NettyChannelBuilder.forAddress(lab.address(i), 1051).usePlaintext().build());
    }
    for (int i = 1; i <= NODES; i++) {
      awaitPeers(i);
    }
  }

  @AfterEach
  void stop() throws Exception {
    channels.forEach(ManagedChannel::shutdownNow);
    channels.clear();
    for (Process p : nodes) {
      p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
    nodes.clear();
    if (lab != null) {
      lab.close();
    }
  }

  @Test
  void partialCut_nodesOneAndThreeCutBothReachTwo_oneCountPerKeyAndNoDecisionFails()
      throws Exception {
    Figures f = underFault("cut", Fault.CUT, 1, 3);

    // Measured: 1 of 3 630 (the target is under 0.1 %). A silent drop is found from timed-out
    // batches, so a slower machine can fail one more batch window after the grace: bounded at 0.5 %.
    assertThat(f.failedAfterGrace).as(f.toString()).isLessThanOrEqualTo(f.calls / 200);
    assertThat(f.maxAdmitted).as(f.toString()).isLessThanOrEqualTo((long) (LIMIT * 1.1));
    assertThat(f.notReady).as(f.toString()).isZero();
    assertThat(f.ringChanges).as(f.toString()).containsOnly(0.0);
  }

  @Test
  void oneWayDrop_nodeOneCannotSendToTwo_oneCountPerKeyAndNoDecisionFails() throws Exception {
    Figures f = underFault("oneway", Fault.ONE_WAY, 1, 2);

    assertThat(f.failedAfterGrace).as(f.toString()).isLessThanOrEqualTo(f.calls / 200);
    assertThat(f.maxAdmitted).as(f.toString()).isLessThanOrEqualTo((long) (LIMIT * 1.1));
    assertThat(f.notReady).as(f.toString()).isZero();
    assertThat(f.ringChanges).as(f.toString()).containsOnly(0.0);
  }

  /** What one fault did to the decisions of the load sent during it. */
  private record Figures(
      String name,
      long calls,
      long failedAfterGrace,
      long maxAdmitted,
      double meanAdmitted,
      long notReady,
      List<Double> ringChanges,
      String firstFailure) {
    @Override
    public String toString() {
      return name
          + ": "
          + calls
          + " calls, "
          + failedAfterGrace
          + " failed from "
          + GRACE.toSeconds()
          + " s after the fault, admitted per key (limit "
          + LIMIT
          + "): max "
          + maxAdmitted
          + ", mean "
          + String.format("%.1f", meanAdmitted)
          + "; not-ready answers "
          + notReady
          + "; ring changes per node "
          + ringChanges
          + (firstFailure == null ? "" : "; first failure: " + firstFailure);
    }
  }

  /**
   * Injects {@code fault} between hosts {@code a} and {@code b}, sends {@link #KEYS} fresh keys
   * limited to {@link #LIMIT} per minute round-robin to the three nodes for {@link #FAULT}, heals,
   * and returns what happened.
   */
  private Figures underFault(String name, Fault fault, int a, int b) throws Exception {
    List<Double> ringsBefore = ringChanges();
    String run = name + "-" + System.nanoTime();
    long[] admitted = new long[KEYS];
    long calls = 0;
    long failed = 0;
    long notReady = 0;
    String firstFailure = null;
    lab.inject(fault, a, b);
    try {
      long start = System.nanoTime();
      long end = start + FAULT.toNanos();
      int next = 0;
      for (long round = 0; ; round++) {
        long due = start + round * ROUND.toNanos();
        if (due >= end) {
          break;
        }
        long wait = due - System.nanoTime();
        if (wait > 0) {
          TimeUnit.NANOSECONDS.sleep(wait);
        }
        for (int k = 0; k < KEYS; k++) {
          int node = next++ % NODES;
          long sent = System.nanoTime();
          calls++;
          String error = call(node, run + "-" + k);
          if (error == null) {
            admitted[k]++;
          } else if (!error.equals(Status.OVER_LIMIT.name())
              && sent - start >= GRACE.toNanos()) {
            failed++;
            firstFailure = firstFailure == null ? "node " + (node + 1) + ": " + error : firstFailure;
          }
        }
        if (round % 10 == 0) {
          for (int i = 1; i <= NODES; i++) {
            if (status(i, "/readyz") != 200) {
              notReady++;
            }
          }
        }
      }
    } finally {
      lab.heal();
    }
    List<Double> ringsAfter = ringChanges();
    List<Double> changes = new ArrayList<>();
    for (int i = 0; i < NODES; i++) {
      changes.add(ringsAfter.get(i) - ringsBefore.get(i));
    }
    long max = 0;
    long sum = 0;
    for (long n : admitted) {
      max = Math.max(max, n);
      sum += n;
    }
    Figures figures =
        new Figures(
            name, calls, failed, max, (double) sum / KEYS, notReady, changes, firstFailure);
    System.out.println("PartitionJarIT " + figures);
    return figures;
  }

  /**
   * Sends one hit on {@code key} to node {@code node} (0-based); returns null when admitted,
   * {@code OVER_LIMIT} when refused, else what failed.
   */
  private String call(int node, String key) {
    try {
      GetRateLimitsResp resp =
          V1Grpc.newBlockingStub(channels.get(node))
              .withDeadlineAfter(1, TimeUnit.SECONDS)
              .getRateLimits(
                  GetRateLimitsReq.newBuilder()
                      .addRequests(
                          RateLimitReq.newBuilder()
                              .setName("partition")
                              .setUniqueKey(key)
                              .setHits(1)
                              .setLimit(LIMIT)
                              .setDuration(60_000))
                      .build());
      RateLimitResp item = resp.getResponses(0);
      if (!item.getError().isEmpty()) {
        return item.getError();
      }
      return item.getStatus() == Status.UNDER_LIMIT ? null : item.getStatus().name();
    } catch (RuntimeException e) {
      return e.toString();
    }
  }

  private List<Double> ringChanges() throws Exception {
    List<Double> out = new ArrayList<>();
    for (int i = 1; i <= NODES; i++) {
      Matcher m = RING_CHANGES.matcher(get(i, "/metrics"));
      out.add(m.find() ? Double.parseDouble(m.group(1)) : 0.0);
    }
    return out;
  }

  private void awaitPeers(int i) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    String last = "";
    while (System.nanoTime() < deadline) {
      try {
        last = get(i, "/v1/HealthCheck");
        if (last.contains("\"peer_count\":" + NODES) || last.contains("\"peerCount\":" + NODES)) {
          return;
        }
      } catch (IOException e) {
        last = e.toString();
      }
      TimeUnit.MILLISECONDS.sleep(200);
    }
    throw new AssertionError(
        "node "
            + i
            + " did not see "
            + NODES
            + " peers: "
            + last
            + "\n"
            + Files.readString(logs.resolve("node" + i + ".log")));
  }

  private String get(int i, String path) throws Exception {
    return http.send(request(i, path), HttpResponse.BodyHandlers.ofString()).body();
  }

  private int status(int i, String path) throws Exception {
    return http.send(request(i, path), HttpResponse.BodyHandlers.discarding()).statusCode();
  }

  private HttpRequest request(int i, String path) {
    return HttpRequest.newBuilder(URI.create("http://" + lab.address(i) + ":1050" + path))
        .timeout(Duration.ofSeconds(2))
        .build();
  }
}
