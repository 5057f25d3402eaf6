package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.peer.auth.PeerSecret;
import dev.weir.core.cluster.peer.auth.PeerSettings;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FreePorts;
import dev.weir.core.testkit.RawGrpc;
import dev.weir.envoy.EnvoySettings;
import dev.weir.proto.gubernator.Behavior;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.HealthCheckReq;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.V1Grpc;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import reactor.blockhound.BlockHound;

/**
 * No call a client or a peer can make blocks a transport thread: with BlockHound watching every
 * Netty event loop (gRPC's, through Netty's own BlockHound integration), two members serve {@code
 * ShouldRateLimit}, {@code GetRateLimits} (local, forwarded, {@code GLOBAL}, {@code NO_BATCHING}),
 * health checks and a malformed message, then one member stops while the other forwards to it, and
 * every blocking call made on an event loop is recorded. Client gRPC handlers run on the event loops
 * ({@code directExecutor()}), so a blocking call there would stall every connection of that loop.
 *
 * <p>Runs in a surefire execution of its own ({@code event-loop-blocking} in this module's POM):
 * BlockHound instruments the JVM for good, and needs {@code -XX:+AllowRedefinitionToAddDeleteMethods}.
 */
class EventLoopBlockingTest {

  private static final List<String> BLOCKED = new CopyOnWriteArrayList<>();

  private static final String YAML =
      """
      domain: edge
      descriptors:
        - key: remote_address
          rate_limit:
            unit: minute
            requests_per_unit: 3
      """;

  @TempDir Path dir;
  private final List<AutoCloseable> resources = new ArrayList<>();

  @BeforeAll
  static void watchEventLoops() {
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

  @AfterEach
  void close() throws Exception {
    for (int i = resources.size() - 1; i >= 0; i--) {
      resources.get(i).close();
    }
  }

  @Test
  void blockHound_sleepOnANettyEventLoop_isRecorded() throws Exception {
    NioEventLoopGroup loop = new NioEventLoopGroup(1);
    try {
      loop.submit(() -> sleep(1)).get(5, TimeUnit.SECONDS);
    } finally {
      loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
    }

    assertThat(BLOCKED).anyMatch(call -> call.contains("sleep"));
    BLOCKED.clear();
  }

  @Test
  void everyCall_twoMembersThenOneStops_noEventLoopBlocks() throws Exception {
    Files.writeString(dir.resolve("edge.yaml"), YAML);
    int[] grpc = {FreePorts.next(), FreePorts.next()};
    int[] peer = {FreePorts.next(), FreePorts.next()};
    List<String> members =
        List.of("127.0.0.1:" + grpc[0] + "@" + peer[0], "127.0.0.1:" + grpc[1] + "@" + peer[1]);
    WeirNode b = node(grpc[1], peer[1], members);
    WeirNode a = node(grpc[0], peer[0], members);
    Await.until(
        Duration.ofSeconds(10),
        () -> a.cluster().membership().ring().peers().size() == 2,
        "both members on the ring");
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", a.grpcPort()).usePlaintext().build();
    resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    V1Grpc.V1BlockingStub v1 = V1Grpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);
    RateLimitServiceGrpc.RateLimitServiceBlockingStub rls =
        RateLimitServiceGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);

    for (int round = 0; round < 3; round++) {
      assertThat(errors(v1.getRateLimits(items(20, 0)))).isEmpty();
      assertThat(errors(v1.getRateLimits(items(20, Behavior.GLOBAL_VALUE)))).isEmpty();
      assertThat(errors(v1.getRateLimits(items(5, Behavior.NO_BATCHING_VALUE)))).isEmpty();
      assertThat(rls.shouldRateLimit(envoy("10.0.0.1")).getOverallCode()).isEqualTo(Code.OK);
    }
    assertThat(rls.shouldRateLimit(envoy("10.0.0.1")).getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(a.cluster().peers().clients()).anyMatch(c -> c.itemsSent() > 0);
    v1.healthCheck(HealthCheckReq.getDefaultInstance());
    HealthGrpc.newBlockingStub(channel)
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .check(HealthCheckRequest.getDefaultInstance());
    assertThat(RawGrpc.unary(channel, V1Grpc.SERVICE_NAME + "/GetRateLimits", new byte[] {(byte) 0xff}))
        .extracting(io.grpc.Status::isOk)
        .isEqualTo(false);

    b.close();
    for (int round = 0; round < 3; round++) {
      v1.getRateLimits(items(20, 0));
    }
    Await.until(
        Duration.ofSeconds(10),
        () -> errors(v1.getRateLimits(items(20, 0))).isEmpty(),
        "the stopped member's keys answered by the other");

    assertThat(BLOCKED).as("blocking calls on event loops").isEmpty();
  }

  private WeirNode node(int grpcPort, int peerPort, List<String> members) throws Exception {
    HostPort address = new HostPort("127.0.0.1", grpcPort);
    WeirConfig config =
        new WeirConfig(address, new HostPort("127.0.0.1", 0), address, 10_000, "info");
    WeirNode node =
        WeirNode.builder(config)
            .cluster(ClusterSettings.defaults().withStaticPeers(members))
            .peers(
                new PeerSettings(
                    new HostPort("127.0.0.1", peerPort),
                    Optional.of(PeerSecret.of("weir-event-loop-blocking-test")),
                    Optional.empty(),
                    false))
            .envoy(EnvoySettings.DEFAULTS.withConfig(dir))
            .start();
    resources.add(node);
    return node;
  }

  private static GetRateLimitsReq items(int n, int behavior) {
    GetRateLimitsReq.Builder request = GetRateLimitsReq.newBuilder();
    for (int i = 0; i < n; i++) {
      request.addRequests(
          RateLimitReq.newBuilder()
              .setName("blocking_" + behavior)
              .setUniqueKey("key-" + i)
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

  private static Object sleep(long millis) throws InterruptedException {
    Thread.sleep(millis);
    return null;
  }
}
