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
import com.google.common.util.concurrent.ListenableFuture;
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
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
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
  /**
   * Each key's limit per minute under a fault between nodes: about half of the 120 hits a key gets
   * in {@link #FAULT}, so a key that two nodes counted apart would admit more than it.
   */
  private static final long LIMIT = 60;
  /**
   * Each key's limit per minute during the isolation: well under the hits each side of the cut gets
   * in {@link #ISOLATION} (about 24 on node 3, 49 on nodes 1 and 2), so each side reaches it and a
   * side that admitted more than its limit shows.
   */
  private static final long ISOLATION_LIMIT = 10;
  private static final Duration FAULT = Duration.ofSeconds(25);
  private static final Duration GRACE = Duration.ofSeconds(2);
  private static final Duration ISOLATION = Duration.ofSeconds(15);
  /** How soon after a heal every key must have one owner again (issue #33). */
  private static final Duration HEALED = Duration.ofSeconds(5);
  private static final Duration ROUND = Duration.ofMillis(208);
  /**
   * {@code WEIR_BATCH_TIMEOUT} of the nodes under a partial cut or a one-way drop, where each key
   * keeps one count only while the node that lost its link to the owner keeps the owner on its
   * ring: that takes an indirect probe answered within this deadline (the asked node waits 4/5 of
   * it for the owner). The default 500 ms was missed on a machine loaded far past its two cores
   * (the owner left the ring twice and a key admitted 61 of 60); a quiet machine answers in
   * milliseconds either way. Twice the default, as {@link PeerFaultsJarIT} uses for the same
   * reason; the lossy link and the isolation keep the default, which their bounds were measured
   * with.
   */
  private static final Duration PARTIAL_CUT_BATCH_TIMEOUT = Duration.ofSeconds(1);
  /** Weir's default {@code WEIR_BATCH_TIMEOUT}, which {@code start(null)} leaves. */
  private static final Duration DEFAULT_BATCH_TIMEOUT = Duration.ofMillis(500);
  private static final Pattern RING_CHANGES =
      Pattern.compile("^weir_ring_changes_total(?:\\{[^}]*\\})? (\\S+)$", Pattern.MULTILINE);

  private final HttpClient http = HttpClient.newHttpClient();
  /** The key prefix of the current fault's load: each fault counts fresh keys. */
  private String run;
  /** The limit of the current fault's keys. */
  private long limit = LIMIT;
  private final List<Process> nodes = new ArrayList<>();
  private final List<ManagedChannel> channels = new ArrayList<>();
  private NetLab lab;
  private Path logs;

  /**
   * Starts a fresh cluster of three nodes with default settings, except {@code WEIR_BATCH_TIMEOUT}
   * = {@code batchTimeout} when not null, and waits until every node is healthy with all three.
   */
  private void start(Duration batchTimeout) throws Exception {
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
      if (batchTimeout != null) {
        env.put("WEIR_BATCH_TIMEOUT", batchTimeout.toMillis() + "ms");
      }
      nodes.add(builder.start());
      channels.add(
          NettyChannelBuilder.forAddress(lab.address(i), 1051).usePlaintext().build());
    }
    try {
      awaitAllHealthy(Duration.ofSeconds(60), "after the start");
    } catch (AssertionError e) {
      StringBuilder logsOf = new StringBuilder(e.getMessage());
      for (int i = 1; i <= NODES; i++) {
        logsOf.append("\nnode ").append(i).append(":\n");
        logsOf.append(Files.readString(logs.resolve("node" + i + ".log")));
      }
      throw new AssertionError(logsOf.toString(), e);
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
  void partialCut_nodesOneAndThreeCutBothReachTwo_oneCountPerKeyAndAtMostHalfAPercentFailed()
      throws Exception {
    start(PARTIAL_CUT_BATCH_TIMEOUT);
    Figures f = underFault("cut", Fault.CUT, 1, 3);

    // Measured: 0 or 1 of 3 630 (the target is under 0.1 %). A silent drop is found from
    // timed-out batches, so a slower machine can fail one more batch window after the grace: 0.5 %.
    assertOneCountPerKeyAndSteady(
        f, f.calls / 200, perKeyFailures(f.calls / 200, PARTIAL_CUT_BATCH_TIMEOUT));
  }

  @Test
  void oneWayDrop_nodeOneCannotSendToTwo_oneCountPerKeyAndAtMostHalfAPercentFailed()
      throws Exception {
    start(PARTIAL_CUT_BATCH_TIMEOUT);
    Figures f = underFault("oneway", Fault.ONE_WAY, 1, 2);

    assertOneCountPerKeyAndSteady(
        f, f.calls / 200, perKeyFailures(f.calls / 200, PARTIAL_CUT_BATCH_TIMEOUT));
  }

  @Test
  void isolatedNode_threeCutFromOneAndTwo_eachSideAdmitsAtMostTheLimitAndOneOwnerSoonAfterTheHeal()
      throws Exception {
    start(null);
    Figures f = underFault("isolated", () -> lab.isolate(3), ISOLATION, ISOLATION_LIMIT);
    long[][] admittedBy = f.admittedBy();
    long healed = f.healedAtNanos;
    awaitOneOwnerPerKey(Duration.ofSeconds(30));
    Duration agreed = Duration.ofNanos(System.nanoTime() - healed);
    String missing = missingAfterHeal(admittedBy);
    while (missing != null && System.nanoTime() - healed < HEALED.toNanos()) {
      TimeUnit.MILLISECONDS.sleep(100);
      missing = missingAfterHeal(admittedBy);
    }
    long settled = (System.nanoTime() - healed) / 1_000_000;
    long[] isolatedSide = new long[KEYS];
    long[] restSide = new long[KEYS];
    for (int k = 0; k < KEYS; k++) {
      isolatedSide[k] = admittedBy[2][k];
      restSide[k] = admittedBy[0][k] + admittedBy[1][k];
    }
    String sides =
        String.format(
            "node 3 admitted per key at most %d, %d in all; nodes 1 and 2 at most %d, %d in all"
                + " (limit %d, %d keys)",
            max(isolatedSide),
            sum(isolatedSide),
            max(restSide),
            sum(restSide),
            ISOLATION_LIMIT,
            KEYS);
    System.out.printf(
        "PartitionJarIT isolated: one owner per key %d ms after the heal, counts settled %d ms"
            + " after it (%s); %s%n",
        agreed.toMillis(), settled, missing == null ? "none missing" : missing, sides);

    // Each side of the cut answers its own callers: node 3 from its own buckets, nodes 1 and 2 as
    // the owners of the keys it had. Neither side admits more than the limit of any key (so a key
    // admits at most twice its limit, which needs no assertion of its own); and each side does
    // admit (nearly) every key's limit, as its calls are more than the limit: a side that refused
    // its callers' keys would fall short.
    for (int k = 0; k < KEYS; k++) {
      assertThat(isolatedSide[k])
          .as("key %d admitted by node 3, cut off; %s; %s", k, sides, f)
          .isLessThanOrEqualTo(ISOLATION_LIMIT);
      assertThat(restSide[k])
          .as("key %d admitted by nodes 1 and 2; %s; %s", k, sides, f)
          .isLessThanOrEqualTo(ISOLATION_LIMIT);
    }
    long eachSide = (long) Math.ceil(0.9 * KEYS * ISOLATION_LIMIT);
    assertThat(sum(isolatedSide))
        .as("admitted by node 3 over all keys; %s; %s", sides, f)
        .isGreaterThanOrEqualTo(eachSide);
    assertThat(sum(restSide))
        .as("admitted by nodes 1 and 2 over all keys; %s; %s", sides, f)
        .isGreaterThanOrEqualTo(eachSide);
    assertThat(f.failedAfterGrace).as(f.toString()).isLessThanOrEqualTo(f.calls / 200);
    assertThat(f.healthyAfterHealMillis).as(f.toString()).isLessThanOrEqualTo(HEALED.toMillis());
    assertThat(agreed).as("one owner per key after the heal").isLessThanOrEqualTo(HEALED);
    assertThat(missing).as("hits of the more consumed side missing after the heal").isNull();
  }

  /**
   * Returns a key whose count after the heal (a zero-hit call through node 1) holds fewer hits than
   * the side of the cut that admitted more of them, or null when every key holds at least that.
   */
  private String missingAfterHeal(long[][] admittedBy) {
    for (int k = 0; k < KEYS; k++) {
      long isolatedSide = admittedBy[2][k];
      long restSide = admittedBy[0][k] + admittedBy[1][k];
      RateLimitResp now = probe(0, run + "-" + k);
      if (now == null || !now.getError().isEmpty()) {
        return "key " + k + ": node 1 did not answer";
      }
      if (limit - now.getRemaining() < Math.min(limit, Math.max(isolatedSide, restSide))) {
        return "key "
            + k
            + ": node 3 admitted "
            + isolatedSide
            + ", nodes 1 and 2 "
            + restSide
            + ", remaining after the heal "
            + now.getRemaining()
            + " at "
            + now.getMetadataOrDefault("owner", lab.address(1) + ":1051");
      }
    }
    return null;
  }

  @Test
  void lossyLink_thirtyPercentDropBetweenTwoAndThree_decisionsAnsweredAndRingsSteady()
      throws Exception {
    start(null);
    Figures f = underFault("lossy", Fault.LOSSY, 2, 3);

    // Measured over more than a dozen runs: 0.3 % to 5.0 % of 3 630 (5.0 % once at load average
    // 17 to 20, docs/reliability.md; otherwise at most 3.9 %, two above 3.5 %), each a
    // batch across the lossy link whose packets TCP resent more than WEIR_BATCH_TIMEOUT later (0.3
    // x 0.3 of them are lost twice, 200 + 400 ms): answered with DEADLINE_EXCEEDED within the
    // caller's deadline (Envoy fails open). A link the cluster stopped recovering from fails far
    // more than 6 %. No key may fail more than 3 times its fair share of that (3 x 217 / 30 = 21 of
    // its 121 calls): the failures follow batches across the link, so keys owned by node 2 or 3
    // (about two in three) take them all, but a few keys failing nearly every call do not pass.
    assertOneCountPerKeyAndSteady(
        f, f.calls * 6 / 100, perKeyFailures(f.calls * 6 / 100, DEFAULT_BATCH_TIMEOUT));
  }

  /**
   * The most calls of one key that may fail from {@link #GRACE} on when at most {@code failed} of
   * all calls may and the nodes run with {@code batchTimeout}: three times the key's fair share of
   * them, and at least three timeouts' worth. A key's front node is {@code (k + round) % 3}, so the
   * key crosses a faulty link only every third round, and one timed-out batch fails at most one
   * call of it at the default 500 ms {@code WEIR_BATCH_TIMEOUT} (up to 3 rounds) or two at 1 s (up
   * to 5 rounds).
   */
  private static long perKeyFailures(long failed, Duration batchTimeout) {
    long perTimeout = batchTimeout.compareTo(DEFAULT_BATCH_TIMEOUT) > 0 ? 2 : 1;
    return Math.max(3 * failed / KEYS, 3 * perTimeout);
  }

  /**
   * Asserts that during the fault at most {@code failed} decisions failed after the grace and at
   * most {@code failedPerKey} of any one key, no key admitted more than 1.1 times its limit (one
   * count per key) nor fewer than 0.9 times it less its calls that failed before it was first
   * refused (such a call may have been counted by the owner, a forward whose answer was lost or
   * one relayed after it timed out; one that failed once the key was refused cannot have lowered
   * what it admitted, nor can one that was refused), every node admitted at least a sixth of the
   * limit of each key (each key goes to every node in turn, a third of its calls each, so a node
   * refusing or failing its callers falls short), every node stayed ready, no node's ring changed,
   * and every node was healthy within {@link #HEALED} of the heal. The failures before the key's
   * first refusal are bounded by the calls of the grace (any of which may fail: the moment between
   * the fault and the peer being found down) and the key's budget after it.
   */
  private static void assertOneCountPerKeyAndSteady(Figures f, long failed, long failedPerKey) {
    assertThat(f.failedAfterGrace).as(f.toString()).isLessThanOrEqualTo(failed);
    assertThat(f.maxAdmitted).as(f.toString()).isLessThanOrEqualTo((long) (LIMIT * 1.1));
    long least = (long) Math.ceil(0.9 * LIMIT);
    for (int k = 0; k < KEYS; k++) {
      assertThat(f.failedAfterGraceOf()[k])
          .as("key %d: calls failed from %d s on (at most %d of one key); %s",
              k, GRACE.toSeconds(), failedPerKey, f)
          .isLessThanOrEqualTo(failedPerKey);
      assertThat(f.admitted()[k])
          .as("key %d: admitted %d, failed %d, %d of them before its first refusal; %s",
              k, f.admitted()[k], f.errored()[k], f.erroredUnrefused()[k], f)
          .isGreaterThanOrEqualTo(least - f.erroredUnrefused()[k]);
      for (int node = 0; node < NODES; node++) {
        assertThat(f.admittedBy()[node][k])
            .as("key %d admitted by node %d; %s", k, node + 1, f)
            .isGreaterThanOrEqualTo(LIMIT / (2 * NODES));
      }
    }
    assertThat(f.notReady).as(f.toString()).isZero();
    assertThat(f.ringChanges).as(f.toString()).containsOnly(0.0);
    assertThat(f.healthyAfterHealMillis).as(f.toString()).isLessThanOrEqualTo(HEALED.toMillis());
  }

  private static long max(long[] values) {
    long max = 0;
    for (long v : values) {
      max = Math.max(max, v);
    }
    return max;
  }

  private static long min(long[] values) {
    long min = Long.MAX_VALUE;
    for (long v : values) {
      min = Math.min(min, v);
    }
    return min;
  }

  private static long sum(long[] values) {
    long sum = 0;
    for (long v : values) {
      sum += v;
    }
    return sum;
  }

  /**
   * Polls every node's {@code HealthCheck} until all three are healthy (no peer down or failing)
   * with all three members; returns how long that took.
   */
  private Duration awaitAllHealthy(Duration patience, String when) throws Exception {
    long start = System.nanoTime();
    String last = "";
    while (System.nanoTime() - start < patience.toNanos()) {
      boolean all = true;
      for (int i = 1; i <= NODES && all; i++) {
        try {
          String health = get(i, "/v1/HealthCheck");
          last = "node " + i + ": " + health;
          all =
              health.contains("\"status\":\"healthy\"")
                  && (health.contains("\"peer_count\":" + NODES)
                      || health.contains("\"peerCount\":" + NODES));
        } catch (IOException e) {
          last = "node " + i + ": " + e;
          all = false;
        }
      }
      if (all) {
        return Duration.ofNanos(System.nanoTime() - start);
      }
      TimeUnit.MILLISECONDS.sleep(100);
    }
    throw new AssertionError("not every node healthy " + patience + " " + when + ": " + last);
  }

  /**
   * Polls every key on every node with zero hits until all three name the same owner for each
   * key; returns how long that took.
   */
  private Duration awaitOneOwnerPerKey(Duration patience) throws Exception {
    long start = System.nanoTime();
    long deadline = start + patience.toNanos();
    String disagreement = "";
    while (System.nanoTime() < deadline) {
      disagreement = ownerDisagreement();
      if (disagreement == null) {
        return Duration.ofNanos(System.nanoTime() - start);
      }
      TimeUnit.MILLISECONDS.sleep(100);
    }
    throw new AssertionError("no single owner per key after " + patience + ": " + disagreement);
  }

  /** Returns a key the three nodes name different owners for, or null when they agree on all. */
  private String ownerDisagreement() {
    for (int k = 0; k < KEYS; k++) {
      String first = null;
      for (int node = 0; node < NODES; node++) {
        RateLimitResp item = probe(node, run + "-" + k);
        if (item == null || !item.getError().isEmpty()) {
          return "key " + k + ": node " + (node + 1) + " did not answer"
              + (item == null ? "" : ": " + item.getError());
        }
        String owner = item.getMetadataOrDefault("owner", lab.address(node + 1) + ":1051");
        if (first == null) {
          first = owner;
        } else if (!first.equals(owner)) {
          return "key " + k + ": " + first + " and " + owner;
        }
      }
    }
    return null;
  }

  /** Asks node {@code node} (0-based) about {@code key} with zero hits; null when it failed. */
  private RateLimitResp probe(int node, String key) {
    try {
      return V1Grpc.newBlockingStub(channels.get(node))
          .withDeadlineAfter(1, TimeUnit.SECONDS)
          .getRateLimits(
              GetRateLimitsReq.newBuilder()
                  .addRequests(
                      RateLimitReq.newBuilder()
                          .setName("partition")
                          .setUniqueKey(key)
                          .setHits(0)
                          .setLimit(limit)
                          .setDuration(60_000))
                  .build())
          .getResponses(0);
    } catch (RuntimeException e) {
      return null;
    }
  }

  /** What one fault did to the decisions of the load sent during it. */
  private record Figures(
      String name,
      long limit,
      long calls,
      long failedAfterGrace,
      long maxAdmitted,
      double meanAdmitted,
      long notReady,
      List<Double> ringChanges,
      long healedAtNanos,
      long healthyAfterHealMillis,
      String firstFailure,
      long[] admitted,
      long[] errored,
      long[] erroredUnrefused,
      long[] failedAfterGraceOf,
      long[][] admittedBy) {
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
          + limit
          + "): max "
          + maxAdmitted
          + ", mean "
          + String.format("%.1f", meanAdmitted)
          + ", least admitted "
          + min(admitted)
          + ", least admitted or failed "
          + leastAnswered()
          + ", most failed of one key from "
          + GRACE.toSeconds()
          + " s on "
          + max(failedAfterGraceOf)
          + ", least by one node "
          + leastByOneNode()
          + "; not-ready answers "
          + notReady
          + "; ring changes per node "
          + ringChanges
          + "; every node healthy "
          + healthyAfterHealMillis
          + " ms after the heal"
          + (firstFailure == null ? "" : "; first failure: " + firstFailure);
    }

    /** The fewest calls of one key that were admitted or failed (not refused as over the limit). */
    long leastAnswered() {
      long least = Long.MAX_VALUE;
      for (int k = 0; k < admitted.length; k++) {
        least = Math.min(least, admitted[k] + errored[k]);
      }
      return least;
    }

    /** The fewest hits of one key that one node admitted. */
    long leastByOneNode() {
      long least = Long.MAX_VALUE;
      for (long[] byNode : admittedBy) {
        for (long n : byNode) {
          least = Math.min(least, n);
        }
      }
      return least;
    }
  }

  /**
   * Injects {@code fault} between hosts {@code a} and {@code b}, sends {@link #KEYS} fresh keys
   * limited to {@link #LIMIT} per minute round-robin to the three nodes for {@link #FAULT}, heals,
   * and returns what happened.
   */
  private Figures underFault(String name, Fault fault, int a, int b) throws Exception {
    return underFault(name, () -> lab.inject(fault, a, b), FAULT, LIMIT);
  }

  /** Something that breaks the lab's network. */
  private interface Breakage {
    void apply() throws IOException;
  }

  /**
   * Applies {@code breakage}, sends {@link #KEYS} fresh keys limited to {@code keyLimit} per minute
   * round-robin to the three nodes for {@code length}, counting the hits each key and each node
   * admitted and each key's failed calls, heals, and returns what happened.
   */
  private Figures underFault(String name, Breakage breakage, Duration length, long keyLimit)
      throws Exception {
    List<Double> ringsBefore = ringChanges();
    run = name + "-" + System.nanoTime();
    limit = keyLimit;
    long[] admitted = new long[KEYS];
    long[] errored = new long[KEYS];
    long[] erroredUnrefused = new long[KEYS];
    long[] failedAfterGraceOf = new long[KEYS];
    boolean[] refused = new boolean[KEYS];
    long[][] admittedBy = new long[NODES][KEYS];
    long calls = 0;
    long failed = 0;
    long notReady = 0;
    String firstFailure = null;
    breakage.apply();
    try {
      long start = System.nanoTime();
      long end = start + length.toNanos();
      for (long round = 0; ; round++) {
        long due = start + round * ROUND.toNanos();
        if (due >= end) {
          break;
        }
        long wait = due - System.nanoTime();
        if (wait > 0) {
          TimeUnit.NANOSECONDS.sleep(wait);
        }
        // A round's calls are in flight together, so a slow answer does not hold back the others
        // or the next round: the load keeps its rate whatever the fault does to latency.
        long sent = System.nanoTime();
        List<ListenableFuture<GetRateLimitsResp>> answers = new ArrayList<>();
        for (int k = 0; k < KEYS; k++) {
          // Each key goes to every node in turn, so that two owners of one key would both count it.
          answers.add(call((int) ((k + round) % NODES), run + "-" + k));
        }
        for (int k = 0; k < KEYS; k++) {
          int node = (int) ((k + round) % NODES);
          calls++;
          String error = outcome(answers.get(k));
          if (error == null) {
            admitted[k]++;
            admittedBy[node][k]++;
          } else if (error.equals(Status.OVER_LIMIT.name())) {
            refused[k] = true;
          } else {
            errored[k]++;
            if (!refused[k]) {
              erroredUnrefused[k]++;
            }
            if (sent - start >= GRACE.toNanos()) {
              failed++;
              failedAfterGraceOf[k]++;
              firstFailure =
                  firstFailure == null ? "node " + (node + 1) + ": " + error : firstFailure;
            }
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
    long healedAt = System.nanoTime();
    long healedIn = awaitAllHealthy(Duration.ofSeconds(30), "after the heal").toMillis();
    List<Double> ringsAfter = ringChanges();
    List<Double> changes = new ArrayList<>();
    for (int i = 0; i < NODES; i++) {
      changes.add(ringsAfter.get(i) - ringsBefore.get(i));
    }
    Figures figures =
        new Figures(
            name,
            keyLimit,
            calls,
            failed,
            max(admitted),
            (double) sum(admitted) / KEYS,
            notReady,
            changes,
            healedAt,
            healedIn,
            firstFailure,
            admitted,
            errored,
            erroredUnrefused,
            failedAfterGraceOf,
            admittedBy);
    System.out.println("PartitionJarIT " + figures);
    return figures;
  }

  /** Sends one hit on {@code key} to node {@code node} (0-based), with a 1 s deadline. */
  private ListenableFuture<GetRateLimitsResp> call(int node, String key) {
    return V1Grpc.newFutureStub(channels.get(node))
        .withDeadlineAfter(1, TimeUnit.SECONDS)
        .getRateLimits(
            GetRateLimitsReq.newBuilder()
                .addRequests(
                    RateLimitReq.newBuilder()
                        .setName("partition")
                        .setUniqueKey(key)
                        .setHits(1)
                        .setLimit(limit)
                        .setDuration(60_000))
                .build());
  }

  /**
   * Returns null when {@code answer} admitted its hit, {@code OVER_LIMIT} when refused, else what
   * failed.
   */
  private static String outcome(ListenableFuture<GetRateLimitsResp> answer)
      throws InterruptedException {
    try {
      RateLimitResp item = answer.get().getResponses(0);
      if (!item.getError().isEmpty()) {
        return item.getError();
      }
      return item.getStatus() == Status.UNDER_LIMIT ? null : item.getStatus().name();
    } catch (ExecutionException e) {
      return e.getCause().toString();
    }
  }

  /**
   * Returns each node's {@code weir_ring_changes_total}; fails when a node does not answer {@code
   * /metrics} with 200 or its answer lacks the meter (a change would then go unseen).
   */
  private List<Double> ringChanges() throws Exception {
    List<Double> out = new ArrayList<>();
    for (int i = 1; i <= NODES; i++) {
      HttpResponse<String> metrics =
          http.send(request(i, "/metrics"), HttpResponse.BodyHandlers.ofString());
      assertThat(metrics.statusCode()).as("node %d: GET /metrics", i).isEqualTo(200);
      Matcher m = RING_CHANGES.matcher(metrics.body());
      assertThat(m.find()).as("node %d: weir_ring_changes_total in /metrics", i).isTrue();
      out.add(Double.parseDouble(m.group(1)));
    }
    return out;
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
