package dev.weir.envoy.xds;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.config.EnvReader;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.FreePorts;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLoadOptions;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.metrics.EnvoyMetrics;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Reconnecting to a management server over a real socket: once the server is back, the stream the
 * client's backoff opens reaches it, whatever gRPC's own connection backoff (a second or more
 * after a failed connect) would wait.
 */
class XdsReconnectTest {

  private static final Duration WAIT = Duration.ofSeconds(20);

  private final FakeClock clock = new FakeClock();
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final RateLimitConfigServer management = new RateLimitConfigServer();
  private Server server;
  private XdsConfigClient client;

  @AfterEach
  void stop() {
    if (client != null) {
      client.close();
    }
    if (server != null) {
      server.shutdownNow();
    }
  }

  @Test
  void serverBackAfterAFailedConnect_theNextRetryReachesIt() throws Exception {
    int port = FreePorts.next();
    XdsSettings settings =
        XdsSettings.from(
            new EnvReader(
                Map.of(
                    "WEIR_ENVOY_XDS_SERVER_URL", "127.0.0.1:" + port,
                    "WEIR_ENVOY_XDS_SERVER_CONNECT_RETRY_INTERVAL", "10ms",
                    "WEIR_ENVOY_XDS_BACKOFF_JITTER", "false")),
            UnaryOperator.identity());
    client =
        new XdsConfigClient(
            settings,
            XdsChannels.factory(settings),
            new ConfigLoader(ConfigLoadOptions.DEFAULTS),
            new ConfigHolder(),
            new EnvoyMetrics(new SimpleMeterRegistry()),
            clock,
            () -> 0.5);
    client.start(scheduler);
    Await.until(WAIT, () -> scheduler.pending() == 1, "the first connect failed");
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port))
            .addService(management)
            .build()
            .start();

    scheduler.advance(Duration.ofMillis(10));

    Await.until(
        WAIT,
        () -> management.openStreams() == 1 || scheduler.pending() == 1,
        "the retry reached the server or failed");
    assertThat(management.openStreams()).as("streams open at the server").isEqualTo(1);
  }
}
