package dev.weir.discovery.kubernetes;

import static dev.weir.core.discovery.RecordingListener.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.discovery.RecordingListener;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.HashMap;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Watch errors: the API server is down at start, comes up, goes away and comes back. */
class KubernetesDiscoveryOutageTest {
  private static final Duration WAIT = Duration.ofSeconds(30);

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
  void apiServerDownThenUpThenRestarted_keepsPeersReportsProblemAndResyncs() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    Config config =
        new ConfigBuilder()
            .withMasterUrl("http://127.0.0.1:" + port)
            .withNamespace("weir")
            .withWatchReconnectInterval(100)
            .withWatchReconnectLimit(-1)
            .withRequestRetryBackoffInterval(50)
            .build();
    client = new KubernetesClientBuilder().withConfig(config).build();
    discovery = new KubernetesDiscovery(client, false, KubernetesDiscoveryTest.slicesSettings(), "x:1");
    RecordingListener peers = new RecordingListener();

    discovery.start(peers);

    assertThat(peers.received()).containsExactly(Set.of("10.0.0.1:1051"));
    assertThat(eventually(WAIT, () -> discovery.problem().contains("watch is down"))).isTrue();

    server = startServer(port);
    server.createClient().resource(KubernetesDiscoveryTest.slice("s", "weir-peers", "10.0.0.2", true, "10.0.0.3", true)).create();

    assertThat(eventually(WAIT, () -> peers.last().size() == 3 && discovery.problem().isEmpty())).isTrue();

    server.destroy();

    assertThat(eventually(WAIT, () -> discovery.problem().contains("keeping the last 3 known peers"))).isTrue();
    assertThat(peers.last()).hasSize(3);

    server = startServer(port);
    // A restarted mock starts resourceVersions at 1 again (a real API server never does), so the
    // informer, resuming its watch after version 1, sees the change through the update.
    KubernetesClient admin = server.createClient();
    admin.resource(KubernetesDiscoveryTest.slice("s", "weir-peers", "10.0.0.2", true, "10.0.0.4", false)).create();
    admin.resource(KubernetesDiscoveryTest.slice("s", "weir-peers", "10.0.0.2", true, "10.0.0.4", true)).update();

    assertThat(eventually(WAIT, () -> peers.last().equals(Set.of("10.0.0.1:1051", "10.0.0.2:1051", "10.0.0.4:1051"))))
        .isTrue();
    assertThat(eventually(WAIT, () -> discovery.problem().isEmpty())).isTrue();
  }

  private static KubernetesMockServer startServer(int port) {
    KubernetesMockServer server =
        new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(), new KubernetesCrudDispatcher(), false);
    server.init(InetAddress.getLoopbackAddress(), port);
    return server;
  }
}
