package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;

import dev.weir.core.config.EnvReader;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.store.ClockBucketStore;
import dev.weir.core.time.Clock;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.core.testkit.Await;
import dev.weir.metrics.micrometer.MicrometerMetrics;
import dev.weir.tls.TlsSettings;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import java.net.BindException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

class WeirNodeWarmUpTest {

  private static final WeirConfig CONFIG = TestConfigs.loopback();

  /** A budget on {@link #clock}: the transport step reads it about 13 000 times. */
  private static final Duration BUDGET = Duration.ofSeconds(40);

  /** A clock a millisecond later at each read, so that the warm-up's budget passes. */
  private final Clock clock =
      new Clock() {
        private final AtomicLong nanos = new AtomicLong();

        @Override
        public long wallMillis() {
          return 1_767_225_600_000L + TimeUnit.NANOSECONDS.toMillis(nanos.get());
        }

        @Override
        public long monotonicNanos() {
          return nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(1));
        }
      };

  @TempDir Path dir;
  private final ClockBucketStore store = new ClockBucketStore(clock, 1000);
  private WeirNode node;
  private ManagedChannel channel;

  @AfterEach
  void stop() throws Exception {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (node != null) {
      node.close();
    }
  }

  private ManagedChannel channel() {
    channel = NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort()).usePlaintext().build();
    return channel;
  }

  private WeirNode.Builder builder() {
    return WeirNode.builder(CONFIG).clock(clock).store(store);
  }

  /** Returns the checks the node has counted. */
  private double countedChecks() {
    return node.registry().find(MicrometerMetrics.CHECKS).counters().stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  /** Returns the calls the node's gRPC listener has counted. */
  private long countedCalls() {
    return node.registry().find(MicrometerMetrics.GRPC_REQUESTS).timers().stream()
        .mapToLong(Timer::count)
        .sum();
  }

  @Test
  void warmUp_plaintext_transportThenNativeDecisionsBeforeStartReturnsNoneCountedByTheNode()
      throws Exception {
    node = builder().warmUp(BUDGET).start();

    assertThat(node.warmUp())
        .hasValueSatisfying(
            done -> {
              assertThat(done.transport().failure()).isNull();
              assertThat(done.transport().connections()).isEqualTo(TransportWarmUp.CONNECTIONS);
              assertThat(done.transport().answered())
                  .isEqualTo(
                      TransportWarmUp.CONNECTIONS / 2 * TransportWarmUp.CALLS_PER_CONNECTION);
              assertThat(done.method()).isEqualTo("pb.gubernator.V1/GetRateLimits");
              assertThat(done.decisions().failure()).isNull();
              assertThat(done.decisions().answered()).isPositive();
            });
    assertThat(store.size()).as("buckets in the node's store").isZero();
    assertThat(countedChecks()).isZero();
    HealthGrpc.newBlockingStub(channel()).check(HealthCheckRequest.getDefaultInstance());
    Await.until(Duration.ofSeconds(10), () -> countedCalls() == 1, "the client's check counted");
  }

  @Test
  void warmUp_envoyConfig_decisionsAreShouldRateLimitCallsForItsRules() throws Exception {
    Files.writeString(
        dir.resolve("edge.yaml"),
        """
        domain: edge
        descriptors:
          - key: remote_address
            rate_limit: {unit: second, requests_per_unit: 100}
        """);
    node =
        builder()
            .envoy(EnvoySettings.fromEnvironment(Map.of("WEIR_ENVOY_CONFIG", dir.toString())))
            .warmUp(BUDGET)
            .start();

    assertThat(node.warmUp())
        .hasValueSatisfying(
            done -> {
              assertThat(done.method())
                  .isEqualTo("envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit");
              assertThat(done.decisions().failure()).isNull();
              assertThat(done.decisions().answered()).isPositive();
            });
    assertThat(store.size()).as("buckets in the node's store").isZero();
    assertThat(countedChecks()).isZero();
    assertThat(node.registry().find(EnvoyMetrics.PREFIX + "rate_limit.total_hits").counters())
        .isEmpty();
  }

  @Test
  void warmUp_grpcListenerServesTls_decisionsWarmedTransportSkipped() throws Exception {
    TlsSettings tls = TlsSettings.from(new EnvReader(Map.of("WEIR_TLS_AUTO", "true")));
    node =
        builder()
            .ops(new OpsSettings(InputLimits.DEFAULTS, Duration.ZERO, Duration.ofSeconds(5), tls))
            .warmUp(BUDGET)
            .start();

    assertThat(node.warmUp())
        .hasValueSatisfying(
            done -> {
              assertThat(done.transport()).isNull();
              assertThat(done.decisions().answered()).isPositive();
            });
  }

  @Test
  void start_httpPortInUse_failsNamingItBeforeTheWarmUp() throws Exception {
    Logger logger = (Logger) LoggerFactory.getLogger(NodeWarmUp.class);
    ListAppender<ILoggingEvent> logged = new ListAppender<>();
    logged.start();
    logger.addAppender(logged);
    try (ServerSocket taken = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      HostPort http = new HostPort("127.0.0.1", taken.getLocalPort());
      WeirConfig config =
          new WeirConfig(
              CONFIG.grpcAddress(), http, CONFIG.advertiseAddress(), CONFIG.cacheSize(), "info");

      assertThatThrownBy(
              () -> WeirNode.builder(config).clock(clock).store(store).warmUp(BUDGET).start())
          .isInstanceOf(BindException.class)
          .hasMessageContaining("cannot bind the HTTP listener at WEIR_HTTP_ADDRESS=" + http);
      assertThat(logged.list).as("the warm-up's log lines").isEmpty();
    } finally {
      logger.detachAppender(logged);
    }
  }

  @Test
  void builder_byDefault_noWarmUp() throws Exception {
    node = builder().start();

    assertThat(node.warmUp()).isEmpty();
  }
}
