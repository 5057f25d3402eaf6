package dev.weir.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.testkit.TestEtcd;
import dev.weir.core.time.SystemClock;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigLoadOptions;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.rlqs.BucketPlan;
import dev.weir.envoy.rlqs.BucketPlanner;
import dev.weir.envoy.service.CounterKeys;
import dev.weir.envoy.testkit.ProxyFleet;
import dev.weir.envoy.testkit.SimulatedProxy;
import dev.weir.proto.gubernator.Algorithm;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.V1Grpc;
import dev.weir.ring.HashRing;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.BucketId;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse.BucketAction;
import io.grpc.Channel;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * RLQS on three {@code weir.jar} processes that find each other through etcd, with a fleet of six
 * simulated Envoy proxies ({@link SimulatedProxy}, real time, reporting every second) sharing one
 * bucket of 300 requests per 10 s while asking for twice that. The node owning the bucket's counter
 * is drained (SIGTERM): its streams end, the proxies reconnect to the other nodes, and the
 * counter's count moves to the next owner by hand-off. Then that owner dies (SIGKILL): its etcd
 * lease expires, the last node owns the counter and assignments go on. Prints the admitted total
 * per window against the limit.
 *
 * <p>Needs etcd: {@code WEIR_TEST_ETCD}, or an etcd binary on the PATH; skipped with the reason
 * printed otherwise.
 */
class RlqsJarIT {

  private static final int NODES = 3;
  /** The nodes' ring settings: the defaults, as the nodes set none. */
  private static final ClusterSettings RING = ClusterSettings.defaults();
  private static final int PROXIES = 6;
  private static final long LIMIT = 300;
  private static final Duration WINDOW = Duration.ofSeconds(10);
  private static final Duration INTERVAL = Duration.ofSeconds(1);

  /**
   * The etcd lease of each node: a killed node leaves the ring within it. The windows it overlaps
   * may admit the dead owner's count again (it died with the node) and are not held to the limit.
   */
  private static final Duration LEASE = Duration.ofSeconds(2);

  private static final String YAML =
      """
      domain: edge
      descriptors:
        - key: name
          value: api
          rate_limit: {unit: second, unit_multiplier: 10, requests_per_unit: 300}
      """;
  private static final BucketId BUCKET = BucketId.newBuilder().putBucket("name", "api").build();

  private static TestEtcd testEtcd;
  private static String endpoint;

  private final HttpClient http = HttpClient.newHttpClient();
  private final List<NodeProcess> nodes = new ArrayList<>();
  private final List<ManagedChannel> channels = new ArrayList<>();

  @BeforeAll
  static void etcd() throws Exception {
    testEtcd = TestEtcd.forClass(RlqsJarIT.class);
    endpoint = testEtcd.endpoint();
  }

  @AfterAll
  static void stopEtcd() throws Exception {
    if (testEtcd != null) {
      testEtcd.close();
    }
  }

  @AfterEach
  void stop() throws Exception {
    for (ManagedChannel ch : channels) {
      ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    nodes.forEach(NodeProcess::close);
  }

  @Test
  void drainAndDeath_proxiesReconnectCountsMoveAndAssignmentsGoOn() throws Exception {
    RateLimitRequest counter = counter();
    startCluster();
    List<Channel> endpoints = List.copyOf(channels);
    ProxyFleet fleet = new ProxyFleet(SystemClock.INSTANCE, BUCKET, LIMIT, WINDOW);
    for (int i = 0; i < PROXIES; i++) {
      fleet.add(
          new SimulatedProxy(
              "proxy-" + i,
              endpoints,
              i,
              "edge",
              SystemClock.INSTANCE,
              INTERVAL,
              SimulatedProxy.allowAll(),
              null,
              Duration.ZERO),
          ProxyFleet.Demand.steady(2.0 * LIMIT / WINDOW.toSeconds() / PROXIES));
    }
    int owner = ownerOf(counter, List.of(0, 1, 2));
    List<Integer> live = new ArrayList<>(List.of(0, 1, 2));

    run(fleet, Duration.ofSeconds(12));
    List<SimulatedProxy> onOwner =
        fleet.proxies().stream().filter(p -> p.connectedTo() == owner).toList();
    assertThat(onOwner).as("proxies connected to the owner").isNotEmpty();
    long usedBefore = LIMIT - remaining(counter, otherThan(owner, live));
    long windowBefore = windowOf(System.currentTimeMillis());

    assertThat(nodes.get(owner).terminate(Duration.ofSeconds(30))).isEqualTo(143);
    live.remove(Integer.valueOf(owner));
    if (windowOf(System.currentTimeMillis()) == windowBefore) {
      assertThat(LIMIT - remaining(counter, live.get(0)))
          .as("the drained owner's count, on the next owner")
          .isGreaterThanOrEqualTo(usedBefore);
    }
    run(fleet, Duration.ofSeconds(6));
    for (SimulatedProxy p : onOwner) {
      assertThat(p.connectedTo()).as(p.name() + " reconnected").isIn(live);
      assertThat(p.streamsOpened()).isGreaterThan(1);
    }

    int next = ownerOf(counter, live);
    nodes.get(next).close();
    live.remove(Integer.valueOf(next));
    long killedAt = System.currentTimeMillis();
    run(fleet, Duration.ofSeconds(14));
    long responses = fleet.responsesReceived();
    run(fleet, Duration.ofSeconds(12));

    List<ProxyFleet.Window> windows = fleet.windows();
    fleet.print(
        "RlqsJarIT: 6 proxies, 300 per 10 s; the owner drained 12 s in, the next owner killed 6 s"
            + " later, in window "
            + windows.stream().map(ProxyFleet.Window::start).toList().indexOf(windowOf(killedAt)),
        System.out);
    assertThat(fleet.responsesReceived())
        .as("assignments after the death")
        .isGreaterThan(responses);
    for (SimulatedProxy p : fleet.proxies()) {
      assertThat(p.connectedTo()).as(p.name() + " on the last node").isEqualTo(live.get(0));
      BucketAction action = p.assignment(BUCKET);
      assertThat(action).as(p.name() + " assignment").isNotNull();
      assertThat(
              action.getQuotaAssignmentAction().getRateLimitStrategy().hasTokenBucket()
                  || action.getQuotaAssignmentAction().getRateLimitStrategy().hasBlanketRule())
          .isTrue();
    }
    for (ProxyFleet.Window w : windows) {
      boolean lostWithTheDead =
          w.start() + WINDOW.toMillis() > killedAt && w.start() <= killedAt + LEASE.toMillis();
      if (!lostWithTheDead) {
        assertThat(w.ratio())
            .as("admitted / limit in window %d", w.start())
            .isLessThanOrEqualTo(1.05);
      }
    }
    fleet.proxies().forEach(SimulatedProxy::stop);
  }

  private static void run(ProxyFleet fleet, Duration length) throws InterruptedException {
    long end = System.nanoTime() + length.toNanos();
    while (System.nanoTime() < end) {
      fleet.step();
      Thread.sleep(10);
    }
  }

  private static long windowOf(long millis) {
    return millis - Math.floorMod(millis, WINDOW.toMillis());
  }

  private static int otherThan(int owner, List<Integer> live) {
    return live.stream().filter(i -> i != owner).findFirst().orElseThrow();
  }

  /** Returns the counter the bucket's usage is counted on, as Weir's planner makes it. */
  private static RateLimitRequest counter() throws Exception {
    var domain =
        new ConfigLoader(ConfigLoadOptions.DEFAULTS)
            .compile(List.of(new ConfigFile("rlqs.yaml", YAML)))
            .domain("edge")
            .orElseThrow();
    BucketPlan plan =
        new BucketPlanner(
                new CounterKeys(InputLimits.DEFAULTS.maxDescriptorValueBytes()),
                InputLimits.DEFAULTS.maxDescriptorEntries())
            .plan(domain, BUCKET.getBucketMap());
    return ((BucketPlan.Limited) plan).policies().get(0);
  }

  private int ownerOf(RateLimitRequest counter, List<Integer> among) {
    List<String> addresses = among.stream().map(i -> "127.0.0.1:" + nodes.get(i).grpcPort).toList();
    String owner = HashRing.of(addresses, RING.replicas(), RING.hash()).ownerOf(counter.hashKey());
    return among.get(addresses.indexOf(owner));
  }

  /** Returns the counter's remaining count, asked through node {@code via}'s native API. */
  private long remaining(RateLimitRequest counter, int via) {
    RateLimitResp r =
        V1Grpc.newBlockingStub(channels.get(via))
            .withDeadlineAfter(10, TimeUnit.SECONDS)
            .getRateLimits(
                GetRateLimitsReq.newBuilder()
                    .addRequests(
                        RateLimitReq.newBuilder()
                            .setName(counter.name())
                            .setUniqueKey(counter.uniqueKey())
                            .setHits(0)
                            .setLimit(counter.limit())
                            .setDuration(counter.duration())
                            .setAlgorithm(Algorithm.FIXED_WINDOW))
                    .build())
            .getResponses(0);
    assertThat(r.getError()).isEmpty();
    return r.getRemaining();
  }

  private void startCluster() throws Exception {
    Path config = Files.createTempFile("weir-rlqs", ".yaml");
    Files.writeString(config, YAML);
    String prefix = "/weir-rlqs-" + UUID.randomUUID() + "/";
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
                  "2s",
                  "WEIR_BATCH_TIMEOUT",
                  "2s",
                  "WEIR_ADVERTISE_ADDRESS",
                  "127.0.0.1:" + grpcPort,
                  "WEIR_ENVOY_CONFIG",
                  config.toString(),
                  "WEIR_RLQS_REPORT_INTERVAL",
                  "1s")));
    }
    for (NodeProcess node : nodes) {
      node.awaitHealthy(http);
      channels.add(
          NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort).usePlaintext().build());
    }
    for (int i = 0; i < NODES; i++) {
      awaitPeers(i);
    }
  }

  private void awaitPeers(int node) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (System.nanoTime() < deadline) {
      var health =
          V1Grpc.newBlockingStub(channels.get(node))
              .withDeadlineAfter(5, TimeUnit.SECONDS)
              .healthCheck(dev.weir.proto.gubernator.HealthCheckReq.getDefaultInstance());
      if (health.getPeerCount() == NODES && health.getStatus().equals("healthy")) {
        return;
      }
      Thread.sleep(100);
    }
    throw new AssertionError("node " + node + " did not see " + NODES + " peers");
  }
}
