package dev.weir.envoy.xds;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import dev.weir.core.config.EnvReader;
import dev.weir.core.model.Algorithm;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLimits;
import dev.weir.envoy.config.ConfigLoadOptions;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.DomainConfig;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.proto.ratelimit.config.v3.RateLimitConfig;
import dev.weir.proto.ratelimit.config.v3.RateLimitDescriptor;
import dev.weir.proto.ratelimit.config.v3.RateLimitPolicy;
import dev.weir.proto.ratelimit.config.v3.RateLimitUnit;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.cumulative.CumulativeCounter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The xDS config source against a real ADS server on an in-process transport: what it subscribes
 * to, ACK and NACK, and reconnecting after the server goes away, with retries on a fake scheduler.
 */
class XdsConfigClientTest {

  private final String name = InProcessServerBuilder.generateName();
  private final FakeClock clock = new FakeClock();
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final ConfigHolder holder = new ConfigHolder();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final XdsSettings settings =
      XdsSettings.from(
          new EnvReader(
              Map.of(
                  "WEIR_ENVOY_XDS_NODE_ID", "envoy-ratelimit",
                  "WEIR_ENVOY_XDS_NODE_METADATA", "zone=a,cluster=eg",
                  "WEIR_ENVOY_XDS_SERVER_CONNECT_RETRY_INTERVAL", "2s")),
          UnaryOperator.identity());
  private RateLimitConfigServer management = new RateLimitConfigServer();
  private Server server;
  private final List<ManagedChannel> made = new CopyOnWriteArrayList<>();
  private final Supplier<ManagedChannel> channels =
      () -> {
        ManagedChannel channel = InProcessChannelBuilder.forName(name).directExecutor().build();
        made.add(channel);
        return channel;
      };
  private XdsConfigClient client;

  @BeforeEach
  void start() throws Exception {
    server = serve(management);
    client =
        new XdsConfigClient(
            settings,
            channels,
            new ConfigLoader(ConfigLoadOptions.DEFAULTS),
            holder,
            new EnvoyMetrics(registry),
            clock,
            () -> 0.5);
  }

  private Server serve(RateLimitConfigServer service) throws Exception {
    return InProcessServerBuilder.forName(name).directExecutor().addService(service).build().start();
  }

  @AfterEach
  void stop() {
    client.close();
    server.shutdownNow();
  }

  static RateLimitConfig perMinute(String domain, String key, int requests) {
    return RateLimitConfig.newBuilder()
        .setName(domain)
        .setDomain(domain)
        .addDescriptors(
            RateLimitDescriptor.newBuilder()
                .setKey(key)
                .setRateLimit(
                    RateLimitPolicy.newBuilder()
                        .setUnit(RateLimitUnit.MINUTE)
                        .setRequestsPerUnit(requests)))
        .build();
  }

  private long limitOf(String domain, String key) {
    DomainConfig config = holder.current().orElseThrow().domain(domain).orElseThrow();
    return config.root().exact(key, "").orElseThrow().rule().orElseThrow().requestsPerUnit();
  }

  private double counter(String counter) {
    return registry.counter("weir.envoy." + counter).count();
  }

  @Test
  void start_subscribesAsTheNodeToTheRateLimitConfigType() {
    client.start(scheduler);

    DiscoveryRequest first = management.requests().get(0);
    assertThat(first.getTypeUrl())
        .isEqualTo("type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig");
    assertThat(first.getNode().getId()).isEqualTo("envoy-ratelimit");
    assertThat(first.getNode().getMetadata().getFieldsMap())
        .containsEntry("zone", Value.newBuilder().setStringValue("a").build())
        .containsEntry("cluster", Value.newBuilder().setStringValue("eg").build());
    assertThat(first.getResponseNonce()).isEmpty();
    assertThat(holder.current()).isEmpty();
  }

  @Test
  void firstConfig_loadsAndIsAcked() {
    management.push("v1", perMinute("shop", "user", 2), perMinute("api", "key", 7));

    client.start(scheduler);

    assertThat(holder.current().orElseThrow().domains()).containsOnlyKeys("shop", "api");
    assertThat(limitOf("api", "key")).isEqualTo(7);
    DiscoveryRequest ack = management.lastRequest();
    assertThat(ack.getVersionInfo()).isEqualTo("v1");
    assertThat(ack.getResponseNonce()).isEqualTo("nonce-1");
    assertThat(ack.hasErrorDetail()).isFalse();
    assertThat(client.acceptedVersion()).contains("v1");
    assertThat(counter("config_load_success")).isEqualTo(1);
  }

  @Test
  void descriptorMetadata_reachesTheCompiledRule() {
    RateLimitConfig config =
        RateLimitConfig.newBuilder()
            .setName("shop")
            .setDomain("shop")
            .addDescriptors(
                RateLimitDescriptor.newBuilder()
                    .setKey("user")
                    .setMetadata(
                        Struct.newBuilder()
                            .putFields("team", Value.newBuilder().setStringValue("a").build())))
            .build();
    management.push("v1", config);

    client.start(scheduler);

    DomainConfig shop = holder.current().orElseThrow().domain("shop").orElseThrow();
    assertThat(shop.root().exact("user", "").orElseThrow().metadata())
        .isEqualTo(Map.of("team", "a"));
  }

  @Test
  void configWhoseYamlExceedsTheFileLimit_loadsAndIsAcked() {
    RateLimitConfig.Builder large = RateLimitConfig.newBuilder().setName("eg").setDomain("eg");
    for (int i = 0; i < 12_000; i++) {
      String route = "httproute/default/route-" + i + "/rule/0/match/0";
      large.addDescriptors(
          RateLimitDescriptor.newBuilder()
              .setKey(route)
              .setValue(route)
              .setRateLimit(
                  RateLimitPolicy.newBuilder()
                      .setUnit(RateLimitUnit.MINUTE)
                      .setRequestsPerUnit(10)));
    }
    RateLimitConfig config = large.build();
    assertThat(RateLimitConfigYaml.of(config).length())
        .isGreaterThan(ConfigLimits.DEFAULT_MAX_FILE_BYTES);
    management.push("v1", config);

    client.start(scheduler);

    assertThat(management.lastRequest().hasErrorDetail()).isFalse();
    assertThat(holder.current().orElseThrow().domains()).containsOnlyKeys("eg");
    assertThat(client.acceptedVersion()).contains("v1");
  }

  @Test
  void update_replacesTheConfigAndIsAcked() {
    management.push("v1", perMinute("shop", "user", 2));
    client.start(scheduler);

    management.push("v2", perMinute("shop", "user", 50));

    assertThat(limitOf("shop", "user")).isEqualTo(50);
    assertThat(management.lastRequest().getVersionInfo()).isEqualTo("v2");
    assertThat(management.lastRequest().getResponseNonce()).isEqualTo("nonce-2");
    assertThat(counter("config_load_success")).isEqualTo(2);
  }

  @Test
  void badConfig_isNackedWithTheErrorAndTheLastGoodConfigStays() {
    management.push("v1", perMinute("shop", "user", 2));
    client.start(scheduler);
    RateLimitConfig noUnit =
        RateLimitConfig.newBuilder()
            .setName("shop-config")
            .setDomain("shop")
            .addDescriptors(
                RateLimitDescriptor.newBuilder()
                    .setKey("user")
                    .setRateLimit(RateLimitPolicy.newBuilder().setRequestsPerUnit(9)))
            .build();

    management.push("v2", noUnit);

    DiscoveryRequest nack = management.lastRequest();
    assertThat(nack.getVersionInfo()).isEqualTo("v1");
    assertThat(nack.getResponseNonce()).isEqualTo("nonce-2");
    assertThat(nack.getErrorDetail().getCode()).isEqualTo(3);
    assertThat(nack.getErrorDetail().getMessage())
        .isEqualTo(
            "shop-config: invalid rate limit unit 'UNKNOWN': in rate_limit of 'shop.user' at line"
                + " 4; allowed units are second, minute, hour, day, week, month, year (in any case)");
    assertThat(limitOf("shop", "user")).isEqualTo(2);
    assertThat(client.acceptedVersion()).contains("v1");
    assertThat(counter("config_load_error")).isEqualTo(1);
  }

  @Test
  void loadFailingWithoutAMessage_isNackedWithTheExceptionsName_onTheSameStream() {
    restart(
        channels,
        (files, warnings) -> {
          throw new IllegalStateException();
        },
        registry);
    management.push("v1", perMinute("shop", "user", 2));

    client.start(scheduler);

    DiscoveryRequest nack = management.lastRequest();
    assertThat(nack.getResponseNonce()).isEqualTo("nonce-1");
    assertThat(nack.getErrorDetail().getCode()).isEqualTo(3);
    assertThat(nack.getErrorDetail().getMessage()).isEqualTo("java.lang.IllegalStateException");
    assertThat(management.openStreams()).isEqualTo(1);
    assertThat(scheduler.pending()).isZero();
    assertThat(counter("config_load_error")).isEqualTo(1);
  }

  @Test
  void loadFailingWithAnError_isNackedWithTheError_onTheSameStream_andTheLastGoodConfigStays() {
    management.push("v1", perMinute("shop", "user", 2));
    client.start(scheduler);
    restart(
        channels,
        (files, warnings) -> {
          throw new OutOfMemoryError("Java heap space");
        },
        registry);
    management.push("v2", perMinute("shop", "user", 9));

    client.start(scheduler);

    DiscoveryRequest nack = management.lastRequest();
    assertThat(nack.getErrorDetail().getMessage())
        .isEqualTo("java.lang.OutOfMemoryError: Java heap space");
    assertThat(nack.getResponseNonce()).isNotEmpty();
    assertThat(management.openStreams()).isEqualTo(1);
    assertThat(scheduler.pending()).isZero();
    assertThat(counter("config_load_error")).isEqualTo(1);
    assertThat(limitOf("shop", "user")).isEqualTo(2);
  }

  @Test
  void configOverTheCompiledTextLimit_isNackedAndTheLastGoodConfigStays() {
    management.push("v1", perMinute("shop", "user", 2));
    client.start(scheduler);
    // each of the 1 000 children repeats the 20 000-character key in its path and counter name
    RateLimitDescriptor.Builder longKey =
        RateLimitDescriptor.newBuilder().setKey("k".repeat(20_000));
    for (int i = 0; i < 1_000; i++) {
      longKey.addDescriptors(RateLimitDescriptor.newBuilder().setKey("c" + i));
    }

    management.push(
        "v2",
        RateLimitConfig.newBuilder()
            .setName("shop-config")
            .setDomain("shop")
            .addDescriptors(longKey)
            .build());

    DiscoveryRequest nack = management.lastRequest();
    assertThat(nack.getVersionInfo()).isEqualTo("v1");
    assertThat(nack.getErrorDetail().getMessage())
        .startsWith("shop-config: rule 'shop.kkk")
        .contains("over the limit of 33554432 characters for one load")
        .hasSizeLessThan(1024);
    assertThat(limitOf("shop", "user")).isEqualTo(2);
    assertThat(counter("config_load_error")).isEqualTo(1);
  }

  @Test
  void duplicateDomains_areNackedUnlessMerged() {
    management.push(
        "v1",
        perMinute("shop", "a", 1),
        perMinute("shop", "b", 1).toBuilder().setName("shop-b").build());

    client.start(scheduler);

    assertThat(management.lastRequest().getErrorDetail().getMessage())
        .isEqualTo(
            "shop-b: duplicate domain 'shop' in config file: shop declares it too; allowed is one"
                + " resource per domain, or several whose top-level descriptors are merged, with"
                + " WEIR_ENVOY_MERGE_DOMAIN_CONFIG=true");
    assertThat(holder.current()).isEmpty();
  }

  @Test
  void duplicateDescriptor_fromAnEarlierMergedResource_isNamedByItsResourceOnly() {
    restart(
        channels,
        new ConfigLoader(new ConfigLoadOptions(true, Algorithm.FIXED_WINDOW))::compileWritten,
        registry);
    management.push(
        "v1",
        perMinute("shop", "a", 1),
        perMinute("shop", "a", 2).toBuilder().setName("shop-b").build());

    client.start(scheduler);

    assertThat(management.lastRequest().getErrorDetail().getMessage())
        .startsWith("shop-b: duplicate descriptor composite key 'shop.a'")
        .contains(" of the descriptor in resource shop; ");
    assertThat(holder.current()).isEmpty();
  }

  @Test
  void emptySet_afterDomainsLoaded_isNackedAndTheLimitsStay() {
    management.push("v1", perMinute("shop", "user", 2));
    client.start(scheduler);

    management.push("v2");

    DiscoveryRequest nack = management.lastRequest();
    assertThat(nack.getVersionInfo()).isEqualTo("v1");
    assertThat(nack.getErrorDetail().getMessage())
        .isEqualTo(
            "the set holds no RateLimitConfig resource, and loading it would switch off the"
                + " limits of every domain loaded (shop); a set must keep at least one domain"
                + " (restart the node to clear them all)");
    assertThat(limitOf("shop", "user")).isEqualTo(2);
    assertThat(client.acceptedVersion()).contains("v1");
    assertThat(counter("config_load_error")).isEqualTo(1);
  }

  @Test
  void emptySet_beforeAnyDomain_loadsAConfigWithoutDomains() {
    client.start(scheduler);

    management.push("v1");

    assertThat(holder.current().orElseThrow().domains()).isEmpty();
    assertThat(management.lastRequest().hasErrorDetail()).isFalse();
    assertThat(client.acceptedVersion()).contains("v1");
  }

  @Test
  void setWithoutOneDomain_loadsAndDropsThatDomain() {
    management.push("v1", perMinute("shop", "user", 2), perMinute("blog", "user", 3));
    client.start(scheduler);

    management.push("v2", perMinute("shop", "user", 2));

    assertThat(holder.current().orElseThrow().domains()).containsOnlyKeys("shop");
    assertThat(management.lastRequest().hasErrorDetail()).isFalse();
  }

  @Test
  void serverRestart_reconnectsAfterTheBackoffAndLoadsTheNewState() throws Exception {
    management.push("v1", perMinute("shop", "user", 2));
    client.start(scheduler);
    server.shutdownNow().awaitTermination();
    assertThat(scheduler.pending()).isEqualTo(1);
    management = new RateLimitConfigServer();
    management.push("v2", perMinute("shop", "user", 9));
    server = serve(management);

    scheduler.advance(Duration.ofMillis(1999));
    assertThat(management.requests()).isEmpty();
    scheduler.advance(Duration.ofMillis(1));

    DiscoveryRequest resubscribe = management.requests().get(0);
    assertThat(resubscribe.getVersionInfo()).isEqualTo("v1");
    assertThat(resubscribe.getResponseNonce()).isEmpty();
    assertThat(limitOf("shop", "user")).isEqualTo(9);
    assertThat(management.lastRequest().getVersionInfo()).isEqualTo("v2");
  }

  @Test
  void failedReconnects_backOffExponentially_andKeepTheLastConfig() throws Exception {
    management.push("v1", perMinute("shop", "user", 2));
    client.start(scheduler);
    server.shutdownNow().awaitTermination();

    scheduler.advance(Duration.ofSeconds(2));
    assertThat(scheduler.pending()).isEqualTo(1);
    scheduler.advance(Duration.ofMillis(3999));
    assertThat(scheduler.pending()).isEqualTo(1);
    scheduler.advance(Duration.ofMillis(1));

    assertThat(scheduler.pending()).isEqualTo(1);
    assertThat(limitOf("shop", "user")).isEqualTo(2);
  }

  @Test
  void streamsEndingAfterANackedResponse_backOffExponentially_untilASetIsAccepted() {
    RateLimitConfig noUnit =
        RateLimitConfig.newBuilder()
            .setName("shop")
            .setDomain("shop")
            .addDescriptors(
                RateLimitDescriptor.newBuilder()
                    .setKey("user")
                    .setRateLimit(RateLimitPolicy.newBuilder().setRequestsPerUnit(9)))
            .build();
    management.push("v1", noUnit);
    client.start(scheduler);
    assertThat(management.lastRequest().getErrorDetail().getCode()).isEqualTo(3);

    management.dropStreams();
    assertReopensAfter(Duration.ofSeconds(2));
    assertThat(management.lastRequest().getErrorDetail().getCode()).isEqualTo(3);

    management.dropStreams();
    assertReopensAfter(Duration.ofSeconds(4));

    management.dropStreams();
    assertReopensAfter(Duration.ofSeconds(8));

    management.push("v2", perMinute("shop", "user", 2));
    assertThat(management.lastRequest().hasErrorDetail()).isFalse();
    management.dropStreams();
    assertReopensAfter(Duration.ofSeconds(2));
  }

  @Test
  void streamsEndingAfterStayingUpTheLongestWait_reconnectAfterTheFirstWait_shortOnesBackOff() {
    // the server answers nothing, as a snapshot cache answers a resubscription at the accepted
    // version while nothing changed
    client.start(scheduler);
    management.dropStreams();
    scheduler.advance(Duration.ofSeconds(2));
    assertThat(management.openStreams()).isEqualTo(1);
    management.dropStreams();
    scheduler.advance(Duration.ofSeconds(4));
    assertThat(management.openStreams()).isEqualTo(1);

    // up for the longest wait (60 s) without an answer, then closed, as by a max connection age
    scheduler.advance(Duration.ofSeconds(60));
    management.dropStreams();
    assertReopensAfter(Duration.ofSeconds(2));

    // one second short of it: still a failure, so the wait doubles
    scheduler.advance(Duration.ofSeconds(59));
    management.dropStreams();
    assertReopensAfter(Duration.ofSeconds(4));
  }

  /** Asserts that no stream is open until {@code wait} has passed, and one is open then. */
  /** Closes the client and starts over with one of these parts. */
  private void restart(
      Supplier<ManagedChannel> channels,
      XdsConfigClient.Compiler compiler,
      MeterRegistry registry) {
    client.close();
    client =
        new XdsConfigClient(
            settings, channels, compiler, holder, new EnvoyMetrics(registry), clock, () -> 0.5);
  }

  private void assertReopensAfter(Duration wait) {
    scheduler.advance(wait.minusMillis(1));
    assertThat(management.openStreams()).isZero();
    scheduler.advance(Duration.ofMillis(1));
    assertThat(management.openStreams()).isEqualTo(1);
  }

  @Test
  void streamEnding_shutsItsChannelDown_andCloseShutsDownTheCurrentOne() {
    client.start(scheduler);
    management.dropStreams();

    assertThat(made.get(0).isShutdown()).isTrue();
    scheduler.advance(Duration.ofSeconds(2));
    assertThat(made).hasSize(2);
    assertThat(made.get(1).isShutdown()).isFalse();

    client.close();

    assertThat(made).allMatch(ManagedChannel::isShutdown);
  }

  @Test
  void setThatLoads_butFailsToBeCounted_staysLive_andIsNotNacked() {
    SimpleMeterRegistry failing =
        new SimpleMeterRegistry() {
          @Override
          protected Counter newCounter(Meter.Id id) {
            if (!id.getName().endsWith("config_load_success")) {
              return super.newCounter(id);
            }
            return new CumulativeCounter(id) {
              @Override
              public void increment(double amount) {
                throw new IllegalStateException("counter failed");
              }
            };
          }
        };
    restart(channels, new ConfigLoader(ConfigLoadOptions.DEFAULTS)::compileWritten, failing);
    management.push("v1", perMinute("shop", "user", 2));

    client.start(scheduler);

    assertThat(limitOf("shop", "user")).isEqualTo(2);
    assertThat(client.acceptedVersion()).contains("v1");
    assertThat(management.requests()).noneMatch(DiscoveryRequest::hasErrorDetail);
    assertThat(failing.counter("weir.envoy.config_load_error").count()).isZero();
    assertThat(management.openStreams()).isEqualTo(1);
    assertThat(scheduler.pending()).isZero();
  }

  @ParameterizedTest
  @MethodSource("channelBuildFailures")
  void channelFailingToBuild_isRetriedAfterTheBackoff(Throwable failure) {
    AtomicInteger calls = new AtomicInteger();
    restart(
        () -> {
          if (calls.incrementAndGet() == 2 && failure instanceof Error error) {
            throw error;
          } else if (calls.get() == 2) {
            throw (RuntimeException) failure;
          }
          return channels.get();
        },
        new ConfigLoader(ConfigLoadOptions.DEFAULTS)::compileWritten,
        registry);
    management.push("v1", perMinute("shop", "user", 2));
    client.start(scheduler);
    management.dropStreams();

    scheduler.advance(Duration.ofSeconds(2));
    assertThat(calls).hasValue(2);
    assertThat(scheduler.pending()).isEqualTo(1);

    assertReopensAfter(Duration.ofSeconds(4));
    assertThat(calls).hasValue(3);
    assertThat(limitOf("shop", "user")).isEqualTo(2);
  }

  /** A runtime exception and an error (a class gRPC's Netty transport needs, missing). */
  static List<Throwable> channelBuildFailures() {
    return List.of(
        new IllegalArgumentException("no channel"),
        new NoClassDefFoundError("io/grpc/netty/NettyChannelBuilder"));
  }

  @Test
  void close_stopsReconnecting() throws Exception {
    client.start(scheduler);
    server.shutdownNow().awaitTermination();

    client.close();

    assertThat(scheduler.pending()).isZero();
  }
}
