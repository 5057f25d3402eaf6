package dev.weir.discovery.kubernetes;

import static dev.weir.core.discovery.RecordingListener.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.weir.core.discovery.ManualScheduler;
import dev.weir.core.discovery.RecordingListener;
import dev.weir.core.testkit.RecordingMetrics;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.http.Dispatcher;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import io.fabric8.mockwebserver.http.Response;
import io.fabric8.mockwebserver.http.WebSocket;
import io.fabric8.mockwebserver.http.WebSocketListener;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * Discovery error counting against fabric8's mock API server, which answers the first EndpointSlice
 * lists or watches with HTTP 500 and then serves them from its CRUD store.
 */
class KubernetesDiscoveryErrorsTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final String ERROR = "discovery error k8s";

  private final FailingFirst dispatcher = new FailingFirst();
  private final RecordingMetrics metrics = new RecordingMetrics();
  private final ManualScheduler scheduler = new ManualScheduler();
  private KubernetesMockServer server;
  private KubernetesClient client;
  private KubernetesDiscovery discovery;

  @AfterEach
  void close() {
    dispatcher.releaseWatches();
    if (discovery != null) {
      discovery.close();
    }
    if (client != null) {
      client.close();
    }
    if (server != null) {
      server.destroy();
    }
  }

  @Test
  void start_listAnswers500Twice_countsTwoErrorsThenRecovers() throws Exception {
    startServer();
    server.createClient().resource(KubernetesDiscoveryTest.slice("s", "weir-peers", "10.0.0.2", true, "10.0.0.3", true)).create();
    dispatcher.failLists.set(2);
    RecordingListener peers = start();

    assertThat(eventually(WAIT, () -> peers.last().size() == 3 && discovery.problem().isEmpty())).isTrue();

    assertThat(dispatcher.served.get()).isEqualTo(2);
    assertThat(metrics.events()).containsExactly(ERROR, ERROR);
  }

  @Test
  void start_listFailing_selfAloneDeliveredWhileProblemReported() throws Exception {
    startServer();
    dispatcher.failLists.set(Integer.MAX_VALUE);
    Config config = new ConfigBuilder().withMasterUrl("http://127.0.0.1:" + server.getPort()).build();
    client = new KubernetesClientBuilder().withConfig(config).build();
    discovery =
        new KubernetesDiscovery(
            client,
            false,
            KubernetesDiscoveryTest.slicesSettings(),
            "x:1",
            metrics,
            scheduler,
            Duration.ZERO);
    List<String> problemsAtDelivery = new ArrayList<>();
    Logger log = (Logger) LoggerFactory.getLogger(KubernetesDiscovery.class);
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    appender.start();
    log.addAppender(appender);
    try {
      discovery.start(peers -> problemsAtDelivery.add(discovery.problem()));
    } finally {
      log.detachAppender(appender);
    }

    assertThat(problemsAtDelivery)
        .singleElement()
        .asString()
        .containsAnyOf("watch is starting", "watch is down");
    assertThat(discovery.problem()).isNotEmpty();
    assertThat(appender.list)
        .anySatisfy(
            e -> {
              assertThat(e.getLevel()).isEqualTo(Level.WARN);
              assertThat(e.getFormattedMessage())
                  .startsWith(
                      "kubernetes endpointslices of service weir-peers in namespace weir not listed"
                          + " within PT0S: starting with this node alone");
            });
  }

  @Test
  void start_watchAnswers500Once_countsOneErrorThenRelistsAndWatches() throws Exception {
    startServer();
    server.createClient().resource(KubernetesDiscoveryTest.emptySlice("weir-peers-0", "weir-peers")).create();
    dispatcher.failWatches.set(1);
    RecordingListener peers = start();

    assertThat(eventually(WAIT, () -> dispatcher.served.get() == 1 && discovery.problem().isEmpty())).isTrue();
    server.createClient().resource(KubernetesDiscoveryTest.slice("s", "weir-peers", "10.0.0.2", true, "10.0.0.3", false)).create();

    assertThat(eventually(WAIT, () -> peers.last().equals(Set.of("10.0.0.1:1051", "10.0.0.2:1051")))).isTrue();
    assertThat(metrics.events()).containsExactly(ERROR);
  }

  @Test
  void apiServerGone_droppedWatchCountedOnceWhileFabric8Reconnects() throws Exception {
    RecordingListener peers = startWatchingThreePeers();

    server.destroy();
    server = null;

    assertThat(eventually(WAIT, () -> !discovery.watching())).isTrue();
    scheduler.advance(KubernetesDiscovery.WATCH_CHECK.multipliedBy(discovery.downChecks() - 1));
    assertThat(metrics.events()).isEmpty();
    scheduler.advance(KubernetesDiscovery.WATCH_CHECK);
    assertThat(metrics.events()).containsExactly(ERROR);
    assertThat(discovery.problem()).contains("watch is down (watch connection lost, reconnecting)");

    scheduler.advance(KubernetesDiscovery.WATCH_CHECK.multipliedBy(5));
    assertThat(discovery.problem()).isNotEmpty();
    assertThat(metrics.events()).containsExactly(ERROR);
    assertThat(peers.last()).hasSize(3);
  }

  @Test
  void watchRenewedWithinGrace_countsNoErrorAndReportsNoProblem() throws Exception {
    RecordingListener peers = startWatchingThreePeers();

    endWatchAndHoldItsRenewal();
    for (int check = 1; check < discovery.downChecks(); check++) {
      assertThat(discovery.problem()).as("problem() after %d checks without a watch", check - 1).isEmpty();
      scheduler.advance(KubernetesDiscovery.WATCH_CHECK);
    }
    assertThat(discovery.problem()).isEmpty();
    dispatcher.releaseWatches();

    assertThat(eventually(WAIT, () -> discovery.watching())).isTrue();
    scheduler.advance(KubernetesDiscovery.WATCH_CHECK.multipliedBy(5));
    assertThat(metrics.events()).isEmpty();
    assertThat(discovery.problem()).isEmpty();
    assertThat(peers.last()).hasSize(3);
  }

  @Test
  void watchDownPastGrace_countsOneErrorAndReportsTheWatchDownUntilBack() throws Exception {
    RecordingListener peers = startWatchingThreePeers();

    endWatchAndHoldItsRenewal();
    scheduler.advance(KubernetesDiscovery.WATCH_CHECK.multipliedBy(discovery.downChecks()));

    assertThat(metrics.events()).containsExactly(ERROR);
    assertThat(discovery.problem())
        .isEqualTo(
            "kubernetes endpointslices of service weir-peers in namespace weir watch is down (watch"
                + " connection lost, reconnecting); keeping the last 3 known peers");
    dispatcher.releaseWatches();
    assertThat(eventually(WAIT, () -> discovery.watching())).isTrue();
    scheduler.advance(KubernetesDiscovery.WATCH_CHECK);
    assertThat(discovery.problem()).isEmpty();
    assertThat(metrics.events()).containsExactly(ERROR);
  }

  @Test
  void listFailsAfterWatchExpired_laterWatchRenewalDoesNotNameThatError() throws Exception {
    RecordingListener peers = startWatchingThreePeers();

    dispatcher.failLists.set(1);
    assertThat(eventually(WAIT, () -> dispatcher.openWatches() == 1)).isTrue();
    dispatcher.expireWatches();
    assertThat(eventually(WAIT, () -> dispatcher.served.get() == 1 && discovery.watching())).isTrue();
    scheduler.advance(KubernetesDiscovery.WATCH_CHECK);
    assertThat(metrics.events()).containsExactly(ERROR);
    assertThat(discovery.problem()).isEmpty();

    endWatchAndHoldItsRenewal();
    assertThat(discovery.problem()).doesNotContain("etcdserver");
    scheduler.advance(KubernetesDiscovery.WATCH_CHECK.multipliedBy(discovery.downChecks()));
    assertThat(discovery.problem()).doesNotContain("etcdserver").contains("watch is down");
  }

  @Test
  void close_stopsTheWatchCheck() throws Exception {
    startServer();
    start();

    discovery.close();

    assertThat(scheduler.pending()).isZero();
  }

  // Ends the open watches the way the API server ends one that timed out, and holds the watch that
  // fabric8 opens next until the test releases it.
  private void endWatchAndHoldItsRenewal() throws InterruptedException {
    assertThat(eventually(WAIT, () -> dispatcher.openWatches() == 1)).isTrue();
    dispatcher.holdWatches();
    dispatcher.endWatches();
    assertThat(eventually(WAIT, () -> dispatcher.held.get() == 1)).isTrue();
  }

  /**
   * Returns the listener of a discovery started against a server listing two more peers, once it
   * knows all three, reports no problem and has passed one watch check.
   */
  private RecordingListener startWatchingThreePeers() throws Exception {
    startServer();
    server.createClient().resource(KubernetesDiscoveryTest.slice("s", "weir-peers", "10.0.0.2", true, "10.0.0.3", true)).create();
    RecordingListener peers = start();
    assertThat(eventually(WAIT, () -> peers.last().size() == 3 && discovery.problem().isEmpty())).isTrue();
    scheduler.advance(KubernetesDiscovery.WATCH_CHECK);
    return peers;
  }

  private void startServer() {
    server = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(), dispatcher, false);
    server.init(InetAddress.getLoopbackAddress(), 0);
  }

  private RecordingListener start() {
    Config config =
        new ConfigBuilder()
            .withMasterUrl("http://127.0.0.1:" + server.getPort())
            .withNamespace("weir")
            .withWatchReconnectInterval(50)
            .withWatchReconnectLimit(-1)
            .withRequestRetryBackoffLimit(0)
            .build();
    client = new KubernetesClientBuilder().withConfig(config).build();
    discovery = new KubernetesDiscovery(client, false, KubernetesDiscoveryTest.slicesSettings(), "x:1", metrics, scheduler);
    RecordingListener peers = new RecordingListener();
    discovery.start(peers);
    return peers;
  }

  /**
   * Answers the first {@link #failLists} lists and {@link #failWatches} watches of slices with 500,
   * and can end, expire or hold the watches it serves.
   */
  private static final class FailingFirst extends Dispatcher {
    final AtomicInteger failLists = new AtomicInteger();
    final AtomicInteger failWatches = new AtomicInteger();
    final AtomicInteger served = new AtomicInteger();
    final AtomicInteger held = new AtomicInteger();
    private final List<WebSocket> open = new CopyOnWriteArrayList<>();
    private volatile CountDownLatch hold;
    private final KubernetesCrudDispatcher crud = new KubernetesCrudDispatcher();

    @Override
    public MockResponse dispatch(RecordedRequest request) {
      String path = request.getPath();
      if ("GET".equals(request.getMethod()) && path.contains("/endpointslices")) {
        boolean watch = path.contains("watch=true");
        AtomicInteger budget = watch ? failWatches : failLists;
        if (budget.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
          served.incrementAndGet();
          return new MockResponse()
              .setResponseCode(500)
              .setBody("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":500,"
                  + "\"message\":\"etcdserver: request timed out\"}");
        }
        if (watch) {
          return recorded(request);
        }
      }
      return crud.dispatch(request);
    }

    private MockResponse recorded(RecordedRequest request) {
      CountDownLatch wait = hold;
      if (wait != null) {
        held.incrementAndGet();
        try {
          wait.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      MockResponse response = crud.dispatch(request);
      WebSocketListener served = response.getWebSocketListener();
      if (served == null) {
        return response;
      }
      return response.withWebSocketUpgrade(
          new WebSocketListener() {
            @Override
            public void onBeforeAccept(WebSocket webSocket, Response response) {
              served.onBeforeAccept(webSocket, response);
            }

            @Override
            public void onOpen(WebSocket webSocket, Response response) {
              open.add(webSocket);
              served.onOpen(webSocket, response);
            }

            @Override
            public void onMessage(WebSocket webSocket, String text) {
              served.onMessage(webSocket, text);
            }

            @Override
            public void onMessage(WebSocket webSocket, byte[] bytes) {
              served.onMessage(webSocket, bytes);
            }

            @Override
            public void onClosing(WebSocket webSocket, int code, String reason) {
              open.remove(webSocket);
              served.onClosing(webSocket, code, reason);
            }

            @Override
            public void onClosed(WebSocket webSocket, int code, String reason) {
              open.remove(webSocket);
              served.onClosed(webSocket, code, reason);
            }

            @Override
            public void onFailure(WebSocket webSocket, Throwable error, Response response) {
              open.remove(webSocket);
              served.onFailure(webSocket, error, response);
            }
          });
    }

    /** Returns the number of watches open on the server's side. */
    int openWatches() {
      return open.size();
    }

    /** Makes the watch requests that come from now on wait until {@link #releaseWatches}. */
    void holdWatches() {
      hold = new CountDownLatch(1);
    }

    /** Serves the held watch requests and those that come from now on. */
    void releaseWatches() {
      CountDownLatch wait = hold;
      hold = null;
      if (wait != null) {
        wait.countDown();
      }
    }

    /** Closes the open watches normally, as the API server ends a watch whose timeout is up. */
    void endWatches() {
      for (WebSocket ws : open) {
        open.remove(ws);
        ws.close(1000, "");
      }
    }

    /** Sends every open watch an HTTP 410 Gone, as the API server does when its version expired. */
    void expireWatches() {
      for (WebSocket ws : open) {
        ws.send("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
            + "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version\","
            + "\"reason\":\"Expired\",\"code\":410}}");
      }
    }

    @Override
    public void shutdown() {
      crud.shutdown();
    }
  }
}
