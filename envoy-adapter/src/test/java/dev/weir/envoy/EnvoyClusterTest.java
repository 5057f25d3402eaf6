package dev.weir.envoy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.LocalCluster.Node;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigLoadOptions;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.DomainConfig;
import dev.weir.envoy.match.DescriptorMatcher;
import dev.weir.envoy.match.Entry;
import dev.weir.envoy.match.Match;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.service.CounterKeys;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest.Builder;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc.RateLimitServiceBlockingStub;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Envoy adapter over a real cluster: three nodes on loopback, each adapter answering through its
 * node's cluster {@code RateLimitService}, so descriptors owned by other nodes are forwarded.
 */
class EnvoyClusterTest {

  private static final String YAML =
      """
      domain: shop
      descriptors:
        - key: user
          rate_limit: {unit: minute, requests_per_unit: 2}
      """;

  private static final ClusterSettings SETTINGS =
      new ClusterSettings(
          512,
          ClusterSettings.defaults().hash(),
          1000,
          Duration.ofNanos(500_000),
          Duration.ofSeconds(5),
          false,
          Duration.ofMillis(100),
          1000,
          Duration.ofSeconds(5),
          "static",
          List.of(),
          false);

  @TempDir Path dir;

  private final FakeClock clock = new FakeClock();
  private final List<AutoCloseable> open = new ArrayList<>();
  private LocalCluster cluster;
  private DomainConfig shop;

  @AfterEach
  void stop() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void shouldRateLimit_descriptorsOwnedByDifferentNodes_answeredInOneCallWithSharedCounters()
      throws Exception {
    RateLimitEngine engine = new RateLimitEngine(ZoneOffset.UTC);
    cluster =
        LocalCluster.start(
            3, SETTINGS, clock, store -> new LocalLimiter(engine, store, clock)::decide);
    Node a = cluster.node(0);
    Node b = cluster.node(1);
    Files.writeString(dir.resolve("shop.yaml"), YAML);
    shop =
        new ConfigLoader(ConfigLoadOptions.DEFAULTS)
            .compile(List.of(new ConfigFile("shop.yaml", YAML)))
            .domain("shop")
            .orElseThrow();
    String onA = userOwnedBy(a, "a-");
    String onB = userOwnedBy(b, "b-");
    RateLimitServiceBlockingStub viaA = adapterOn(a);
    RateLimitServiceBlockingStub viaB = adapterOn(b);

    RateLimitResponse first = viaA.shouldRateLimit(request(onA, onB));
    RateLimitResponse second = viaB.shouldRateLimit(request(onA, onB));
    RateLimitResponse third = viaA.shouldRateLimit(request(onA, onB));

    assertThat(first.getOverallCode()).isEqualTo(Code.OK);
    assertThat(first.getStatusesList())
        .extracting(DescriptorStatus::getCode, DescriptorStatus::getLimitRemaining)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple(Code.OK, 1),
            org.assertj.core.groups.Tuple.tuple(Code.OK, 1));
    assertThat(second.getOverallCode()).isEqualTo(Code.OK);
    assertThat(second.getStatusesList())
        .extracting(DescriptorStatus::getCode, DescriptorStatus::getLimitRemaining)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple(Code.OK, 0),
            org.assertj.core.groups.Tuple.tuple(Code.OK, 0));
    assertThat(third.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(third.getStatusesList())
        .extracting(DescriptorStatus::getCode)
        .containsExactly(Code.OVER_LIMIT, Code.OVER_LIMIT);
    assertThat(a.store().get(hashKey(onA))).isPresent();
    assertThat(a.store().get(hashKey(onB))).isEmpty();
    assertThat(b.store().get(hashKey(onB))).isPresent();
    assertThat(b.store().get(hashKey(onA))).isEmpty();
    assertThat(a.callsReceived("ForwardBatches")).as("a forwarding stream to a").isPositive();
    assertThat(b.callsReceived("ForwardBatches")).as("a forwarding stream to b").isPositive();
  }

  @Test
  void unitMultiplier_fiveMinuteWindow_everyNodeAgreesOnTheEpochAlignedWindow() throws Exception {
    RateLimitEngine engine = new RateLimitEngine(ZoneOffset.UTC);
    cluster =
        LocalCluster.start(
            3, SETTINGS, clock, store -> new LocalLimiter(engine, store, clock)::decide);
    Files.writeString(
        dir.resolve("shop.yaml"),
        """
        domain: shop
        descriptors:
          - key: user
            rate_limit: {unit: minute, unit_multiplier: 5, requests_per_unit: 3}
          - key: ip
            rate_limit:
              unit: minute
              unit_multiplier: 5
              requests_per_unit: 100
              behavior: [global]
        """);
    List<RateLimitServiceBlockingStub> nodes = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      nodes.add(adapterOn(cluster.node(i)));
    }
    clock.advance(Duration.ofSeconds(123));

    List<Long> globalResets = new ArrayList<>();
    List<Integer> sharedRemaining = new ArrayList<>();
    for (RateLimitServiceBlockingStub node : nodes) {
      RateLimitResponse answer =
          node.shouldRateLimit(
              io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest.newBuilder()
                  .setDomain("shop")
                  .addDescriptors(descriptor("ip", "10.0.0.1"))
                  .addDescriptors(descriptor("user", "alice"))
                  .build());
      globalResets.add(answer.getStatuses(0).getDurationUntilReset().getSeconds());
      sharedRemaining.add(answer.getStatuses(1).getLimitRemaining());
    }
    clock.advance(Duration.ofSeconds(177));
    RateLimitResponse nextWindow =
        nodes.get(2)
            .shouldRateLimit(
                io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest.newBuilder()
                    .setDomain("shop")
                    .addDescriptors(descriptor("user", "alice"))
                    .build());

    assertThat(globalResets).containsExactly(177L, 177L, 177L);
    assertThat(sharedRemaining).containsExactly(2, 1, 0);
    assertThat(nextWindow.getStatuses(0).getLimitRemaining()).isEqualTo(2);
    assertThat(nextWindow.getStatuses(0).getDurationUntilReset().getSeconds()).isEqualTo(300);
  }

  private static RateLimitDescriptor descriptor(String key, String value) {
    return RateLimitDescriptor.newBuilder()
        .addEntries(RateLimitDescriptor.Entry.newBuilder().setKey(key).setValue(value))
        .build();
  }

  /** Serves an adapter over {@code node}'s cluster service in-process and returns Envoy's stub. */
  private RateLimitServiceBlockingStub adapterOn(Node node) throws Exception {
    EnvoyAdapter adapter =
        EnvoyAdapter.start(
            EnvoySettings.fromEnvironment(Map.of(EnvoySettings.CONFIG.name(), dir.toString())),
            node.service(),
            clock,
            new EnvoyMetrics(new SimpleMeterRegistry()),
            InputLimits.DEFAULTS,
            CheckMeter.NOOP);
    open.add(adapter);
    String name = InProcessServerBuilder.generateName();
    Server server =
        InProcessServerBuilder.forName(name)
            .directExecutor()
            .addService(adapter.grpcService())
            .build()
            .start();
    open.add(server::shutdownNow);
    ManagedChannel channel = InProcessChannelBuilder.forName(name).directExecutor().build();
    open.add(channel::shutdownNow);
    return RateLimitServiceGrpc.newBlockingStub(channel);
  }

  /** Returns a {@code user} value whose counter is owned by {@code owner}. */
  private String userOwnedBy(Node owner, String prefix) {
    for (int i = 0; ; i++) {
      String user = prefix + i;
      if (cluster.ownerOf(hashKey(user)) == owner) {
        return user;
      }
    }
  }

  private static final CounterKeys KEYS = 
      new CounterKeys(InputLimits.DEFAULTS.maxDescriptorValueBytes());

  /** Returns the ring key of the counter the adapter derives for descriptor {@code user=value}. */
  private String hashKey(String user) {
    Match match =
        DescriptorMatcher.match(shop.root(), List.of(new Entry("user", user))).orElseThrow();
    return RateLimitRequest.builder(
            CounterKeys.ruleName("shop", match), KEYS.uniqueKey(match))
        .build()
        .hashKey();
  }

  private static io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest request(
      String... users) {
    Builder request =
        io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest.newBuilder().setDomain("shop");
    for (String user : users) {
      request.addDescriptors(
          RateLimitDescriptor.newBuilder()
              .addEntries(RateLimitDescriptor.Entry.newBuilder().setKey("user").setValue(user)));
    }
    return request.build();
  }
}
