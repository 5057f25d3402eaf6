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
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Set;
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
    startServer();
    server.createClient().resource(KubernetesDiscoveryTest.slice("s", "weir-peers", "10.0.0.2", true, "10.0.0.3", true)).create();
    RecordingListener peers = start();
    assertThat(eventually(WAIT, () -> peers.last().size() == 3 && discovery.problem().isEmpty())).isTrue();
    scheduler.advance(KubernetesDiscovery.WATCH_CHECK);

    server.destroy();
    server = null;

    assertThat(eventually(WAIT, () -> !discovery.problem().isEmpty())).isTrue();
    scheduler.advance(KubernetesDiscovery.WATCH_CHECK);
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
  void close_stopsTheWatchCheck() throws Exception {
    startServer();
    start();

    discovery.close();

    assertThat(scheduler.pending()).isZero();
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

  /** Answers the first {@link #failLists} lists and {@link #failWatches} watches of slices with 500. */
  private static final class FailingFirst extends Dispatcher {
    final AtomicInteger failLists = new AtomicInteger();
    final AtomicInteger failWatches = new AtomicInteger();
    final AtomicInteger served = new AtomicInteger();
    private final KubernetesCrudDispatcher crud = new KubernetesCrudDispatcher();

    @Override
    public MockResponse dispatch(RecordedRequest request) {
      String path = request.getPath();
      if ("GET".equals(request.getMethod()) && path.contains("/endpointslices")) {
        AtomicInteger budget = path.contains("watch=true") ? failWatches : failLists;
        if (budget.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
          served.incrementAndGet();
          return new MockResponse()
              .setResponseCode(500)
              .setBody("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":500,"
                  + "\"message\":\"etcdserver: request timed out\"}");
        }
      }
      return crud.dispatch(request);
    }

    @Override
    public void shutdown() {
      crud.shutdown();
    }
  }
}
