package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerLiveness;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.testkit.EtcdProcess;
import dev.weir.core.testkit.TestEtcd;
import java.net.http.HttpClient;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The discovery meters of a running node's {@code GET /metrics}: error counter, health gauge and
 * peer gauge.
 */
class DiscoveryMetricsTest {

  private static final WeirConfig CONFIG = TestConfigs.loopback();

  private final HttpClient http = HttpClient.newHttpClient();
  private final List<AutoCloseable> started = new ArrayList<>();

  @AfterEach
  void stop() throws Exception {
    for (int i = started.size() - 1; i >= 0; i--) {
      started.get(i).close();
    }
  }

  @Test
  void etcdUnreachable_errorsCountedUnhealthyUnderEtcdLabelAndNodeAlone() throws Exception {
    String nowhere = "http://127.0.0.1:" + EtcdProcess.freePort();
    WeirNode node =
        start(
            Map.of(
                "WEIR_PEER_DISCOVERY_TYPE", "etcd",
                "WEIR_ETCD_ENDPOINTS", nowhere,
                "WEIR_ETCD_DIAL_TIMEOUT", "300ms"));

    String text =
        scrapeUntil(node, t -> t.contains("weir_discovery_errors_total{mechanism=\"etcd\"}"));

    assertThat(text)
        .contains("# TYPE weir_discovery_errors_total counter")
        .contains("weir_discovery_errors_total{mechanism=\"etcd\"}")
        .doesNotContain("weir_discovery_errors_total{mechanism=\"k8s\"}")
        .contains("# TYPE weir_discovery_healthy gauge")
        .contains("weir_discovery_healthy{mechanism=\"etcd\"} 0.0")
        .doesNotContain("weir_discovery_healthy{mechanism=\"k8s\"}")
        .contains("weir_peers 1.0");
  }

  @Test
  void etcdDiscovery_peerGaugeFollowsMembersJoiningAndLeaving() throws Exception {
    TestEtcd etcd = TestEtcd.forClass(DiscoveryMetricsTest.class);
    started.add(etcd);
    String endpoint = etcd.endpoint();
    Map<String, String> env =
        Map.of(
            "WEIR_PEER_DISCOVERY_TYPE", "etcd",
            "WEIR_ETCD_ENDPOINTS", endpoint,
            "WEIR_ETCD_KEY_PREFIX", "/weir-test-" + UUID.randomUUID() + "/");
    WeirNode a = start(env);
    assertThat(scrapeUntil(a, t -> t.contains("weir_peers 1.0"))).contains("weir_peers 1.0");
    String healthy = "weir_discovery_healthy{mechanism=\"etcd\"} 1.0";
    assertThat(scrapeUntil(a, t -> t.contains(healthy))).contains(healthy);

    WeirNode b = start(env);

    assertThat(scrapeUntil(a, t -> t.contains("weir_peers 2.0"))).contains("weir_peers 2.0");
    assertThat(scrapeUntil(b, t -> t.contains("weir_peers 2.0"))).contains("weir_peers 2.0");
    String bUp = "weir_peer_up{peer=\"" + b.cluster().self() + "\"} 1.0";
    assertThat(scrapeUntil(a, t -> t.contains(bUp))).contains(bUp);

    CountDownLatch takenDown = new CountDownLatch(1);
    a.cluster()
        .liveness()
        .addListener(
            new PeerLiveness.Listener() {
              @Override
              public void peerDown(String peer, String reason) {
                if (peer.equals(b.cluster().self())) {
                  takenDown.countDown();
                }
              }
            });
    started.remove(b);
    b.close();

    String afterLeave = scrapeUntil(a, t -> t.contains("weir_peers 1.0"));
    assertThat(afterLeave)
        .contains("weir_peers 1.0")
        .doesNotContain("peer=\"" + b.cluster().self() + "\"");
    assertThat(takenDown.await(10, TimeUnit.SECONDS))
        .as("node a takes b down one batch timeout after its leave notice")
        .isTrue();
    assertThat(scrapeUntil(a, t -> true)).doesNotContain("peer=\"" + b.cluster().self() + "\"");
  }

  private WeirNode start(Map<String, String> env) throws Exception {
    WeirNode node =
        WeirNode.builder(CONFIG)
            .discovery(DiscoverySettings.fromEnv(env, "127.0.0.1:0"))
            .peers(TestConfigs.peers())
            .start();
    started.add(node);
    return node;
  }

  private String scrapeUntil(WeirNode node, Predicate<String> ready) throws Exception {
    return MetricsScrape.until(http, node.httpPort(), ready);
  }
}
