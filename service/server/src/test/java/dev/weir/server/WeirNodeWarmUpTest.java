package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.config.EnvReader;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.store.ClockBucketStore;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.metrics.micrometer.MicrometerMetrics;
import dev.weir.tls.TlsSettings;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class WeirNodeWarmUpTest {

  private static final WeirConfig CONFIG = TestConfigs.loopback();

  private final FakeClock clock = new FakeClock();
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
    return WeirNode.builder(CONFIG).clock(clock).store(new ClockBucketStore(clock, 1000));
  }

  /** Returns the calls the node's gRPC listener has counted. */
  private long countedCalls() {
    return node.registry().find(MicrometerMetrics.GRPC_REQUESTS).timers().stream()
        .mapToLong(Timer::count)
        .sum();
  }

  @Test
  void warmUp_plaintext_answeredByTheNodesGrpcListenerBeforeStartReturnsAndNotCounted()
      throws Exception {
    node = builder().warmUp(Duration.ofMinutes(1)).start();

    assertThat(node.warmUp())
        .hasValueSatisfying(
            done -> {
              assertThat(done.failure()).isNull();
              assertThat(done.connections()).isEqualTo(TransportWarmUp.CONNECTIONS);
              assertThat(done.answered())
                  .isEqualTo(
                      TransportWarmUp.CONNECTIONS / 2 * TransportWarmUp.CALLS_PER_CONNECTION);
            });
    HealthGrpc.newBlockingStub(channel()).check(HealthCheckRequest.getDefaultInstance());
    Await.until(Duration.ofSeconds(10), () -> countedCalls() == 1, "the client's check counted");
  }

  @Test
  void warmUp_grpcListenerServesTls_skipped() throws Exception {
    TlsSettings tls = TlsSettings.from(new EnvReader(Map.of("WEIR_TLS_AUTO", "true")));
    node =
        builder()
            .ops(new OpsSettings(InputLimits.DEFAULTS, Duration.ZERO, Duration.ofSeconds(5), tls))
            .warmUp(Duration.ofMinutes(1))
            .start();

    assertThat(node.warmUp()).isEmpty();
  }

  @Test
  void builder_byDefault_noWarmUp() throws Exception {
    node = builder().start();

    assertThat(node.warmUp()).isEmpty();
  }
}
