package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.peer.auth.PeerSecret;
import dev.weir.core.cluster.peer.auth.PeerSettings;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FreePorts;
import dev.weir.core.testkit.RawGrpc;
import dev.weir.core.testkit.RingKeys;
import dev.weir.core.time.ExecutorScheduler;
import dev.weir.envoy.EnvoySettings;
import dev.weir.metrics.micrometer.MicrometerMetrics;
import dev.weir.proto.gubernator.Behavior;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.HealthCheckReq;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.V1Grpc;
import dev.weir.ring.HashRing;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.BucketId;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.nio.NioIoHandler;
import io.micrometer.core.instrument.Timer;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import reactor.blockhound.BlockHound;

/**
 * No call a client or a peer can make blocks a transport thread: with BlockHound watching every
 * Netty event loop (gRPC's and the HTTP listener's, through Netty's own BlockHound integration), two
 * members serve {@code ShouldRateLimit}, {@code GetRateLimits} (local, forwarded, {@code GLOBAL},
 * {@code NO_BATCHING}), health checks, a malformed message, an RLQS report and the HTTP/JSON routes,
 * then one member stops without a leave notice while the other forwards to it (which finds it down on
 * a transport thread and reroutes), then the other stops; every blocking call made on an event loop is
 * recorded. Client gRPC handlers run on the event loops ({@code directExecutor()}), so a blocking call
 * there would stall every connection of that loop.
 *
 * <p>Runs in a surefire execution of its own (profile {@code event-loop-blocking} in this module's
 * POM, active in every build without {@code -Dtest}): BlockHound instruments the JVM for good, and
 * needs {@code -XX:+AllowRedefinitionToAddDeleteMethods}; without that flag the test is skipped. To
 * run it alone: {@code ./mvnw -pl service/server test-compile surefire:test@event-loop-blocking}.
 */
class EventLoopBlockingTest {

  private static final List<String> BLOCKED = new CopyOnWriteArrayList<>();

  private static final String YAML =
      """
      domain: edge
      descriptors:
        - key: remote_address
          rate_limit:
            unit: hour
            requests_per_unit: 3
            algorithm: token_bucket
      """;

  private static final HttpClient HTTP = HttpClient.newHttpClient();

  @TempDir Path dir;
  private final List<AutoCloseable> resources = new ArrayList<>();

  @BeforeAll
  static void watchEventLoops() {
    assumeTrue(
        ManagementFactory.getRuntimeMXBean()
            .getInputArguments()
            .contains("-XX:+AllowRedefinitionToAddDeleteMethods"),
        "BlockHound needs -XX:+AllowRedefinitionToAddDeleteMethods: run this test through its own"
            + " surefire execution (a build without -Dtest, or surefire:test@event-loop-blocking)");
    // install(...) also applies the integrations on the class path, Netty's (shaded by gRPC) among them.
    BlockHound.install(
        builder ->
            builder.blockingMethodCallback(
                method -> {
                  StringBuilder trace = new StringBuilder(Thread.currentThread().getName());
                  trace.append(": ").append(method);
                  for (StackTraceElement frame : new Throwable().getStackTrace()) {
                    trace.append("\n    at ").append(frame);
                  }
                  BLOCKED.add(trace.toString());
                }));
  }

  @BeforeEach
  void forgetEarlierCalls() {
    BLOCKED.clear();
  }

  /** Closes what the test opened, last first, once. */
  @AfterEach
  void close() throws Exception {
    for (int i = resources.size() - 1; i >= 0; i--) {
      resources.remove(i).close();
    }
  }

  @Test
  void blockHound_sleepOnAnEventLoopOfEitherNetty_isRecorded() throws Exception {
    EventLoopGroup grpcNetty = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    io.netty.channel.EventLoopGroup httpNetty =
        new io.netty.channel.MultiThreadIoEventLoopGroup(
            1, io.netty.channel.nio.NioIoHandler.newFactory());
    try {
      grpcNetty.submit(() -> sleep(1)).get(5, TimeUnit.SECONDS);
      assertThat(BLOCKED).as("gRPC's shaded Netty").anyMatch(call -> call.contains("sleep"));
      BLOCKED.clear();
      httpNetty.submit(() -> sleep(1)).get(5, TimeUnit.SECONDS);
      assertThat(BLOCKED).as("the HTTP listener's Netty").anyMatch(call -> call.contains("sleep"));
    } finally {
      BLOCKED.clear();
      grpcNetty.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
      httpNetty.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void clusterScheduler_armedFromAnEventLoopWhileItsThreadsRunTasks_neverParksTheLoop()
      throws Exception {
    // A GLOBAL key's first hit and a forwarded batch arm their timers on the transport thread.
    EventLoopGroup loop = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    try (ExecutorScheduler scheduler = new ExecutorScheduler("blocking-check", 2)) {
      int tasks = 100_000;
      CountDownLatch ran = new CountDownLatch(tasks);
      loop.submit(
              () -> {
                for (int i = 0; i < tasks; i++) {
                  scheduler.schedule(ran::countDown, Duration.ofNanos(i % 4 * 50_000L));
                }
              })
          .get(30, TimeUnit.SECONDS);

      assertThat(ran.await(30, TimeUnit.SECONDS)).isTrue();
      assertThat(BLOCKED).isEmpty();
    } finally {
      loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void everyCall_twoMembersThenOneStops_noEventLoopBlocks() throws Exception {
    Files.writeString(dir.resolve("edge.yaml"), YAML);
    int[] grpc = {FreePorts.next(), FreePorts.next()};
    int[] peer = {FreePorts.next(), FreePorts.next()};
    List<String> members =
        List.of("127.0.0.1:" + grpc[0] + "@" + peer[0], "127.0.0.1:" + grpc[1] + "@" + peer[1]);
    // b stops without a leave notice (no hand-off), so a finds it down on a transport thread.
    WeirNode b = node(grpc[1], peer[1], members, false);
    WeirNode a = node(grpc[0], peer[0], members, true);
    Await.until(
        Duration.ofSeconds(10),
        () -> a.cluster().membership().ring().peers().size() == 2,
        "both members on the ring");
    HashRing ring = a.cluster().membership().ring();
    String bAddress = b.advertiseAddress().toString();
    List<String> keys = RingKeys.split(ring, "blocking_0", "key-", bAddress, 5, 15);
    List<String> globalKeys =
        RingKeys.split(ring, "blocking_" + Behavior.GLOBAL_VALUE, "key-", bAddress, 5, 15);
    List<String> unbatchedKeys =
        RingKeys.split(ring, "blocking_" + Behavior.NO_BATCHING_VALUE, "key-", bAddress, 2, 3);
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", a.grpcPort()).usePlaintext().build();
    resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    // A deadline per call: a stub's deadline runs from the moment it is made.
    CallDeadline deadline = new CallDeadline(Duration.ofSeconds(10));
    V1Grpc.V1BlockingStub v1 = V1Grpc.newBlockingStub(channel).withInterceptors(deadline);
    RateLimitServiceGrpc.RateLimitServiceBlockingStub rls =
        RateLimitServiceGrpc.newBlockingStub(channel).withInterceptors(deadline);

    for (int round = 0; round < 3; round++) {
      assertThat(errors(v1.getRateLimits(items(keys, 0)))).isEmpty();
      assertThat(errors(v1.getRateLimits(items(globalKeys, Behavior.GLOBAL_VALUE)))).isEmpty();
      assertThat(errors(v1.getRateLimits(items(unbatchedKeys, Behavior.NO_BATCHING_VALUE))))
          .isEmpty();
      assertThat(rls.shouldRateLimit(envoy("10.0.0.1")).getOverallCode()).isEqualTo(Code.OK);
    }
    assertThat(rls.shouldRateLimit(envoy("10.0.0.1")).getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    // Counted per batch in the metrics: the pool's client for b may have been replaced since it sent.
    Await.until(
        Duration.ofSeconds(10),
        () ->
            a.registry().find(MicrometerMetrics.BATCH_SEND).timers().stream()
                    .mapToLong(Timer::count)
                    .sum()
                > 0,
        "a batch forwarded to b");
    v1.healthCheck(HealthCheckReq.getDefaultInstance());
    HealthGrpc.newBlockingStub(channel)
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .check(HealthCheckRequest.getDefaultInstance());
    assertThat(RawGrpc.unary(channel, V1Grpc.SERVICE_NAME + "/GetRateLimits", new byte[] {(byte) 0xff}))
        .extracting(io.grpc.Status::isOk)
        .isEqualTo(false);

    RlqsStream quota = new RlqsStream(channel);
    quota.reportOneAllowed("edge", BucketId.newBuilder().putBucket("client", "c1").build());
    quota.close();
    for (String[] call : HTTP_CALLS) {
      assertThat(http(a, call[0], call[1], call[2])).as(call[1]).isBetween(200, 299);
    }

    b.close();
    for (int round = 0; round < 3; round++) {
      v1.getRateLimits(items(keys, 0));
    }
    Await.until(
        Duration.ofSeconds(10),
        () -> errors(v1.getRateLimits(items(keys, 0))).isEmpty(),
        "the stopped member's keys answered by the other");
    // A peer that announced it is leaving is taken down one batch timeout after its notice.
    Await.until(
        Duration.ofSeconds(5),
        () -> a.cluster().liveness().isDown(b.advertiseAddress().toString()),
        "the stopped member is down");
    close();

    assertThat(BLOCKED).as("blocking calls on event loops").isEmpty();
  }

  /** Method, path and body of the HTTP calls a client makes, each answered 2xx. */
  private static final String[][] HTTP_CALLS = {
    {"POST", "/v1/GetRateLimits",
      "{\"requests\":[{\"name\":\"http\",\"unique_key\":\"k1\",\"hits\":1,\"limit\":9,"
          + "\"duration\":60000},{\"name\":\"http\",\"unique_key\":\"k2\",\"hits\":1,"
          + "\"limit\":9,\"duration\":60000}]}"},
    {"POST", "/json",
      "{\"domain\":\"edge\",\"descriptors\":[{\"entries\":[{\"key\":\"remote_address\","
          + "\"value\":\"10.0.0.2\"}]}]}"},
    {"GET", "/v1/HealthCheck", ""},
    {"GET", "/metrics", ""},
  };

  private static int http(WeirNode node, String method, String path, String body)
      throws Exception {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort() + path))
            .timeout(Duration.ofSeconds(10));
    request =
        method.equals("GET")
            ? request.GET()
            : request
                .header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
    return HTTP.send(request.build(), HttpResponse.BodyHandlers.discarding())
        .statusCode();
  }

  private WeirNode node(int grpcPort, int peerPort, List<String> members, boolean handoff)
      throws Exception {
    HostPort address = new HostPort("127.0.0.1", grpcPort);
    WeirConfig config =
        new WeirConfig(address, new HostPort("127.0.0.1", 0), address, 10_000, "info");
    WeirNode node =
        WeirNode.builder(config)
            .cluster(ClusterSettings.defaults().withStaticPeers(members).withHandoff(handoff))
            .peers(
                new PeerSettings(
                    new HostPort("127.0.0.1", peerPort),
                    Optional.of(PeerSecret.of("weir-event-loop-blocking-test")),
                    Optional.empty(),
                    Optional.empty(),
                    false))
            .envoy(EnvoySettings.DEFAULTS.withConfig(dir))
            .start();
    resources.add(node);
    return node;
  }

  private static GetRateLimitsReq items(List<String> keys, int behavior) {
    GetRateLimitsReq.Builder request = GetRateLimitsReq.newBuilder();
    for (String key : keys) {
      request.addRequests(
          RateLimitReq.newBuilder()
              .setName("blocking_" + behavior)
              .setUniqueKey(key)
              .setHits(1)
              .setLimit(1000)
              .setDuration(60_000)
              .setBehaviorValue(behavior));
    }
    return request.build();
  }

  private static List<String> errors(GetRateLimitsResp answer) {
    return answer.getResponsesList().stream()
        .map(r -> r.getError())
        .filter(e -> !e.isEmpty())
        .toList();
  }

  private static RateLimitRequest envoy(String client) {
    return RateLimitRequest.newBuilder()
        .setDomain("edge")
        .addDescriptors(
            RateLimitDescriptor.newBuilder()
                .addEntries(
                    RateLimitDescriptor.Entry.newBuilder()
                        .setKey("remote_address")
                        .setValue(client)))
        .build();
  }

  /** Gives every call it intercepts a deadline of its own, from the moment the call starts. */
  private record CallDeadline(Duration timeout) implements ClientInterceptor {
    @Override
    public <Q, A> ClientCall<Q, A> interceptCall(
        MethodDescriptor<Q, A> method, CallOptions options, Channel next) {
      return next.newCall(
          method, options.withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS));
    }
  }

  private static Object sleep(long millis) throws InterruptedException {
    Thread.sleep(millis);
    return null;
  }
}
