package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.google.protobuf.util.JsonFormat;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.Decision;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.store.CacheStatistics;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.ForwardingBucketStore;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.envoy.EnvoySettings;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.Status;
import dev.weir.tls.TlsSettings;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.net.InetAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

class WeirNodeShutdownTest {

  private static final WeirConfig CONFIG = TestConfigs.loopback();
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final FakeClock clock = new FakeClock();
  private final CountDownLatch entered = new CountDownLatch(1);
  private final CountDownLatch release = new CountDownLatch(1);
  private WeirNode node;

  @AfterEach
  void stop() {
    release.countDown();
    if (node != null) {
      node.close();
    }
  }

  /**
   * A store that holds requests in flight until {@link #release}: updates of keys ending in {@code
   * block} wait, and so do scrapes of {@code /metrics}, which read its hit count.
   */
  private final class BlockingStore extends ForwardingBucketStore implements CacheStatistics {
    BlockingStore() {
      super(new InMemoryBucketStore(clock));
    }

    @Override
    public RateLimitResponse update(
        String key, long at, Function<BucketState, Decision> update) {
      if (key.endsWith("block")) {
        entered.countDown();
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return super.update(key, at, update);
    }

    @Override
    public long hitCount() {
      entered.countDown();
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return 0;
    }

    @Override
    public long missCount() {
      return 0;
    }

    @Override
    public long evictionCount() {
      return 0;
    }
  }

  private static boolean refusesConnections(int port) {
    try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port)) {
      return false;
    } catch (IOException e) {
      return true;
    }
  }

  private void startNode() throws Exception {
    node = nodeBuilder().start();
  }

  /** Returns a node with a status listener, 60 s to drain and a store that holds key "block". */
  private WeirNode.Builder nodeBuilder() {
    return WeirNode.builder(CONFIG)
        .ops(
            new OpsSettings(
                InputLimits.DEFAULTS,
                Duration.ZERO,
                Duration.ofSeconds(60),
                TlsSettings.DISABLED,
                Optional.of(new HostPort("127.0.0.1", 0))))
        .clock(clock)
        .store(new BlockingStore());
  }

  /** Sends a GetRateLimits request for the key {@code block}, which waits for {@link #release}. */
  private CompletableFuture<HttpResponse<String>> sendBlocked(String behavior) {
    return HttpClient.newHttpClient()
        .sendAsync(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + node.httpPort() + "/v1/GetRateLimits"))
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"requests\":[{\"name\":\"n\",\"unique_key\":\"block\",\"hits\":1,"
                            + "\"limit\":5,\"duration\":60000,\"behavior\":\""
                            + behavior
                            + "\"}]}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void close_httpRequestInFlight_statusListenerClosesWithoutWaitingForHttpDrain()
      throws Exception {
    startNode();
    int status = node.statusPort().orElseThrow();
    CompletableFuture<HttpResponse<String>> inFlight = sendBlocked("BATCHING");
    assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

    Thread closing = new Thread(node::close, "test-close");
    closing.start();
    Await.until(WAIT, () -> refusesConnections(status), "the status port refuses connections");

    assertThat(inFlight).isNotDone();
    assertThat(closing.isAlive()).isTrue();
    release.countDown();
    assertThat(inFlight.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    closing.join(TimeUnit.SECONDS.toMillis(20));
    assertThat(closing.isAlive()).isFalse();
    assertThat(refusesConnections(node.httpPort())).isTrue();
  }

  @Test
  void close_configRewrittenWhileDraining_stillReloaded(@TempDir Path dir) throws Exception {
    Path config = dir.resolve("config.yaml");
    Files.writeString(
        config, "domain: api\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 5}\n");
    node =
        nodeBuilder()
            .envoy(
                EnvoySettings.fromEnvironment(
                    Map.of(
                        "WEIR_ENVOY_CONFIG", dir.toString(),
                        "WEIR_ENVOY_CONFIG_RELOAD_INTERVAL", "10ms")))
            .start();
    int status = node.statusPort().orElseThrow();
    CompletableFuture<HttpResponse<String>> inFlight = sendBlocked("BATCHING");
    assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
    Thread closing = new Thread(node::close, "test-close");
    closing.start();
    Await.until(WAIT, () -> refusesConnections(status), "the status port refuses connections");

    Files.writeString(
        dir.resolve("shop.yaml"),
        "domain: shop\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 5}\n");

    Await.until(
        WAIT,
        () -> node.envoyDomains().orElseThrow().contains("shop"),
        "the config written during the drain is loaded");
    assertThat(inFlight).isNotDone();
    release.countDown();
    assertThat(inFlight.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    closing.join(TimeUnit.SECONDS.toMillis(20));
    assertThat(closing.isAlive()).isFalse();
  }

  @Test
  void close_globalHttpRequestInFlight_answeredAfterGrpcListenerStopped() throws Exception {
    startNode();
    int grpc = node.grpcPort();
    CompletableFuture<HttpResponse<String>> inFlight = sendBlocked("GLOBAL");
    assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

    Thread closing = new Thread(node::close, "test-close");
    closing.start();
    Await.until(
        WAIT,
        () -> refusesConnections(grpc) && closing.getState() == Thread.State.WAITING,
        "the gRPC port refuses connections and close() waits for the listeners to stop");
    release.countDown();

    HttpResponse<String> answer = inFlight.get(10, TimeUnit.SECONDS);
    assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
    GetRateLimitsResp.Builder parsed = GetRateLimitsResp.newBuilder();
    JsonFormat.parser().merge(answer.body(), parsed);
    assertThat(parsed.getResponses(0).getError()).isEmpty();
    assertThat(parsed.getResponses(0).getStatus()).isEqualTo(Status.UNDER_LIMIT);
    closing.join(TimeUnit.SECONDS.toMillis(20));
    assertThat(closing.isAlive()).isFalse();
  }

  @Test
  void close_statusScrapeNeverCompletes_closesWithinStatusGraceNotDrainTimeout() throws Exception {
    startNode();
    HttpClient.newHttpClient()
        .sendAsync(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + node.statusPort().orElseThrow() + "/metrics"))
                .build(),
            HttpResponse.BodyHandlers.discarding());
    assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

    assertTimeoutPreemptively(Duration.ofSeconds(30), node::close);
  }

  @Test
  void stopper_stopThrows_logsWarningNamingIt() throws Exception {
    Logger logger = (Logger) LoggerFactory.getLogger(Listeners.class);
    ListAppender<ILoggingEvent> events = new ListAppender<>();
    events.start();
    logger.addAppender(events);
    try {
      Listeners.stopper(
              "weir-stop-test",
              () -> {
                throw new IllegalStateException("boom");
              })
          .join(TimeUnit.SECONDS.toMillis(10));
    } finally {
      logger.detachAppender(events);
    }

    assertThat(events.list).hasSize(1);
    assertThat(events.list.get(0).getLevel()).isEqualTo(Level.WARN);
    assertThat(events.list.get(0).getFormattedMessage()).isEqualTo("stopping weir-stop-test failed");
    assertThat(events.list.get(0).getThrowableProxy().getMessage()).isEqualTo("boom");
  }
}
