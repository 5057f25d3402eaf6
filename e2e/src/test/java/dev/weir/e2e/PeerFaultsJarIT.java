package dev.weir.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Faults injected into one node of a three-node static-peer cluster of {@code weir.jar} processes
 * under steady load ({@link ClusterLoad}: about 3 000 decisions per second over native gRPC, spread
 * over the nodes): SIGKILL then restart, SIGSTOP for 1.5 s then SIGCONT, SIGTERM then restart. For
 * each event it prints the decisions that failed from 2 s after the event and from 2 s after the
 * node returned, the admissions beyond the limit in the event's set of limited keys, and whether
 * the other nodes stayed ready ({@code GET /readyz}); the figures are in docs/reliability.md.
 *
 * <p>The assertions leave room for a loaded two-core machine but not for the behaviour they guard
 * against: before peer liveness, a killed node's keys failed (37 % of decisions) until it returned
 * and for 18 to 22 s after, one failed call made every other node unready for five minutes, and a
 * draining node failed its own callers' forwarded items.
 */
class PeerFaultsJarIT {

  private static final int NODES = 3;
  private static final long LIMIT = 10;
  private static final int LIMITED_KEYS = 20;
  /**
   * The most admissions beyond the limit one event may cost, summed over its limited keys: one more
   * limit per key. An outage's bound is the down node's keys' limits (about a third of 200); a
   * node just back that is taken off the ring again costs a second, shorter outage of the same kind
   * (docs/reliability.md, "What over-admission means"); up to 113 were measured (107 with
   * stand-ins). Nodes that each counted every key apart would admit up to 2 more limits per key
   * (400), and a limit not kept at all every hit of the event beyond the first 10 per key (the load
   * hits the 20 keys 300 times a second).
   */
  private static final long OVER_ADMITTED_BOUND = (long) LIMITED_KEYS * LIMIT;
  private static final Duration GRACE = Duration.ofSeconds(2);
  private static final Duration WARM_UP = Duration.ofSeconds(4);
  private static final Duration OUTAGE = Duration.ofSeconds(4);
  private static final Duration PAUSE = Duration.ofMillis(1500);
  private static final Duration AFTER_RETURN = Duration.ofSeconds(4);

  /** A forwarding deadline that three JVMs and the load meet on a loaded two-core box. */
  private static final Map<String, String> ENV = Map.of("WEIR_BATCH_TIMEOUT", "1s");

  private final HttpClient http = HttpClient.newHttpClient();
  private final List<NodeProcess> nodes = new ArrayList<>();
  private final int[] grpcPorts = new int[NODES];
  private final int[] httpPorts = new int[NODES];
  private final int[] peerPorts = new int[NODES];
  private String staticPeers;
  private ClusterLoad load;
  private long overAdmittedByReturn;

  /** What one event did to the decisions, the limits and the other nodes' readiness. */
  private record EventReport(
      String event,
      double seconds,
      long decisions,
      long failed,
      long afterEvent,
      long failedAfterEvent,
      long afterReturn,
      long failedAfterReturn,
      long overAdmitted,
      long overAdmittedByReturn,
      long readinessChecks,
      long notReady,
      double returnedAfterSeconds) {

    double failedAfterEventPercent() {
      return percent(failedAfterEvent, afterEvent);
    }

    double failedAfterReturnPercent() {
      return percent(failedAfterReturn, afterReturn);
    }

    private static double percent(long part, long whole) {
      return whole == 0 ? 0 : 100.0 * part / whole;
    }

    String line() {
      return String.format(
          Locale.ROOT,
          "%-18s %4.1fs, %4.0f decisions/s, %6d in all, failed %3d"
              + " | from +2s after the event: %6d, failed %4d (%.3f %%)"
              + " | from +2s after the return (+%.1fs): %6d, failed %4d (%.3f %%) | over-admitted"
              + " %4d, %d of them by the return (limit %d x %d keys) | survivors not ready %d of %d"
              + " checks",
          event,
          seconds,
          decisions / seconds,
          decisions,
          failed,
          afterEvent,
          failedAfterEvent,
          failedAfterEventPercent(),
          returnedAfterSeconds,
          afterReturn,
          failedAfterReturn,
          failedAfterReturnPercent(),
          overAdmitted,
          overAdmittedByReturn,
          LIMIT,
          LIMITED_KEYS,
          notReady,
          readinessChecks);
    }
  }

  @AfterEach
  void stop() throws Exception {
    // SIGKILL ends a node left stopped (a pause whose SIGCONT was never sent) as any other; the
    // nodes are killed even when closing the load fails.
    try {
      if (load != null) {
        load.close();
      }
    } finally {
      nodes.forEach(NodeProcess::close);
    }
  }

  @Test
  void faults_killPauseTerminate_survivorsAnswerAndStayReady() throws Exception {
    startCluster();
    load = new ClusterLoad(List.of(grpcPorts[0], grpcPorts[1], grpcPorts[2]), 16, 300);
    load.start();

    List<EventReport> reports = new ArrayList<>();
    reports.add(killAndRestart(2));
    reports.add(pauseAndResume(1));
    reports.add(terminateAndRestart(0));

    System.out.println(
        "Peer faults, 3 static peers, ~3000 decisions/s over native gRPC, extra env " + extraEnv());
    reports.forEach(r -> System.out.println("  " + r.line()));
    System.out.println("  calls redirected from a node that was gone: " + load.redirected());

    EventReport kill = reports.get(0);
    EventReport pause = reports.get(1);
    EventReport term = reports.get(2);
    for (EventReport r : List.of(kill, pause)) {
      assertThat(r.failedAfterEventPercent()).as(r.event() + " from +2s").isLessThan(0.5);
      assertThat(r.failedAfterReturnPercent()).as(r.event() + " after return").isLessThan(0.1);
    }
    assertThat(term.failed())
        .as("SIGTERM, the draining node's callers included")
        .isLessThanOrEqualTo(term.decisions() / 10_000);
    for (EventReport r : reports) {
      assertThat(r.notReady()).as(r.event() + ": survivors not ready").isZero();
      assertThat(r.readinessChecks()).as(r.event() + ": readiness checked").isPositive();
      // The failure rates above are 0 % of nothing when no decision was counted.
      assertThat(r.afterEvent()).as(r.event() + ": decisions from +2s after the event").isPositive();
      assertThat(r.afterReturn()).as(r.event() + ": decisions from +2s after the return").isPositive();
      assertThat(r.overAdmitted())
          .as(r.event() + ": admissions beyond the limit of " + LIMITED_KEYS + " keys")
          .isLessThanOrEqualTo(OVER_ADMITTED_BOUND);
    }
  }

  private void startCluster() throws Exception {
    for (int i = 0; i < NODES; i++) {
      grpcPorts[i] = NodeProcess.freePort();
      httpPorts[i] = NodeProcess.freePort();
      peerPorts[i] = NodeProcess.freePort();
    }
    staticPeers = NodeProcess.staticPeers(grpcPorts, peerPorts);
    for (int i = 0; i < NODES; i++) {
      nodes.add(startNode(i));
    }
    for (NodeProcess n : nodes) {
      n.awaitHealthy(http);
    }
  }

  private NodeProcess startNode(int i) throws Exception {
    Map<String, String> env = new java.util.HashMap<>(ENV);
    env.putAll(extraEnv());
    env.put("WEIR_STATIC_PEERS", staticPeers);
    return NodeProcess.startMember(grpcPorts[i], httpPorts[i], peerPorts[i], env);
  }

  /**
   * Returns the variables {@code -Dweir.peerFaults.env=NAME=value,...} adds to every node, to
   * measure a setting's effect (docs/reliability.md); none by default.
   */
  private static Map<String, String> extraEnv() {
    Map<String, String> extra = new java.util.LinkedHashMap<>();
    for (String pair : System.getProperty("weir.peerFaults.env", "").split(",")) {
      int eq = pair.indexOf('=');
      if (eq > 0) {
        extra.put(pair.substring(0, eq).trim(), pair.substring(eq + 1).trim());
      }
    }
    return extra;
  }

  private EventReport killAndRestart(int victim) throws Exception {
    String keys = "kill";
    load.limitedKeys(keys, LIMITED_KEYS, LIMIT);
    long start = System.nanoTime();
    Thread.sleep(WARM_UP.toMillis());
    try (ReadinessWatch watch = new ReadinessWatch(survivors(victim))) {
      long event = System.nanoTime();
      load.off(victim);
      nodes.get(victim).kill();
      Thread.sleep(OUTAGE.toMillis());
      long returned = restart(victim);
      Thread.sleep(AFTER_RETURN.toMillis());
      return report("SIGKILL node " + victim, keys, start, event, returned, watch);
    }
  }

  private EventReport pauseAndResume(int victim) throws Exception {
    String keys = "pause";
    load.limitedKeys(keys, LIMITED_KEYS, LIMIT);
    long start = System.nanoTime();
    Thread.sleep(WARM_UP.toMillis());
    try (ReadinessWatch watch = new ReadinessWatch(survivors(victim))) {
      long event = System.nanoTime();
      load.off(victim);
      nodes.get(victim).signal("STOP");
      Thread.sleep(PAUSE.toMillis());
      nodes.get(victim).signal("CONT");
      long returned = returned();
      nodes.get(victim).awaitReady(http);
      load.on(victim, grpcPorts[victim]);
      Thread.sleep(AFTER_RETURN.toMillis());
      return report("SIGSTOP 1.5s node " + victim, keys, start, event, returned, watch);
    }
  }

  private EventReport terminateAndRestart(int victim) throws Exception {
    String keys = "term";
    load.limitedKeys(keys, LIMITED_KEYS, LIMIT);
    long start = System.nanoTime();
    Thread.sleep(WARM_UP.toMillis());
    try (ReadinessWatch watch = new ReadinessWatch(survivors(victim))) {
      long event = System.nanoTime();
      load.draining(victim);
      assertThat(nodes.get(victim).terminate(Duration.ofSeconds(30))).isEqualTo(143);
      load.off(victim);
      long returned = restart(victim);
      Thread.sleep(AFTER_RETURN.toMillis());
      return report("SIGTERM node " + victim, keys, start, event, returned, watch);
    }
  }

  private long restart(int victim) throws Exception {
    NodeProcess fresh = startNode(victim);
    nodes.set(victim, fresh);
    fresh.awaitReady(http);
    load.on(victim, grpcPorts[victim]);
    return returned();
  }

  private long returned() {
    overAdmittedByReturn = load.overAdmitted(load.limitedPrefix());
    return System.nanoTime();
  }

  private List<URI> survivors(int victim) {
    List<URI> uris = new ArrayList<>();
    for (int i = 0; i < NODES; i++) {
      if (i != victim) {
        uris.add(URI.create("http://127.0.0.1:" + httpPorts[i] + "/readyz"));
      }
    }
    return uris;
  }

  private EventReport report(
      String event, String keys, long start, long eventAt, long returned, ReadinessWatch watch) {
    long end = System.nanoTime();
    load.failures().stream()
        .filter(f -> f.sentNanos() - start >= 0 && f.sentNanos() - end <= 0)
        .limit(8)
        .forEach(
            f ->
                System.out.printf(
                    Locale.ROOT,
                    "  %s, failure sent at %+.2fs: %s%n",
                    event,
                    (f.sentNanos() - eventAt) / 1e9,
                    f.error().length() > 160 ? f.error().substring(0, 160) : f.error()));
    long graceNanos = GRACE.toNanos();
    long decisions = 0;
    long failed = 0;
    long afterEvent = 0;
    long failedAfterEvent = 0;
    long afterReturn = 0;
    long failedAfterReturn = 0;
    for (ClusterLoad.Outcome o : load.outcomes()) {
      if (o.sentNanos() - start < 0 || o.sentNanos() - end > 0) {
        continue;
      }
      long items = o.answered() + o.failed();
      decisions += items;
      failed += o.failed();
      if (o.sentNanos() - (eventAt + graceNanos) >= 0) {
        afterEvent += items;
        failedAfterEvent += o.failed();
      }
      if (o.sentNanos() - (returned + graceNanos) >= 0) {
        afterReturn += items;
        failedAfterReturn += o.failed();
      }
    }
    return new EventReport(
        event,
        (end - start) / 1e9,
        decisions,
        failed,
        afterEvent,
        failedAfterEvent,
        afterReturn,
        failedAfterReturn,
        load.overAdmitted(keys),
        overAdmittedByReturn,
        watch.checks.get(),
        watch.notReady.get(),
        (returned - eventAt) / 1e9);
  }

  /** Polls the readiness of some nodes every 100 ms until closed, counting the answers not 200. */
  private final class ReadinessWatch implements AutoCloseable {
    private final AtomicLong checks = new AtomicLong();
    private final AtomicLong notReady = new AtomicLong();
    private final AtomicBoolean stopped = new AtomicBoolean();
    private final List<String> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final Thread poller;

    ReadinessWatch(List<URI> uris) {
      poller =
          new Thread(
              () -> {
                while (!stopped.get()) {
                  for (URI uri : uris) {
                    check(uri);
                  }
                  try {
                    Thread.sleep(100);
                  } catch (InterruptedException e) {
                    return;
                  }
                }
              },
              "readiness-watch");
      poller.setDaemon(true);
      poller.start();
    }

    private void check(URI uri) {
      checks.incrementAndGet();
      try {
        HttpResponse<String> r =
            http.send(
                HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(2)).build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
          notReady.incrementAndGet();
          failures.add(uri + " " + r.statusCode() + " " + r.body());
        }
      } catch (Exception e) {
        notReady.incrementAndGet();
        failures.add(uri + " " + e);
      }
    }

    @Override
    public void close() throws InterruptedException {
      stopped.set(true);
      poller.join();
      if (!failures.isEmpty()) {
        System.out.println(
            "  not ready: "
                + failures.stream().limit(3).collect(Collectors.joining("; ")));
      }
    }
  }
}
