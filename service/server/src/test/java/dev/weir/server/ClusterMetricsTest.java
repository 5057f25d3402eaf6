package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.ClusterNode;
import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.peer.PeerFailureMode;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.metrics.micrometer.MicrometerMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.ZoneOffset;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A peer's series follow its membership, also when events about it arrive after it left or it
 * leaves while off the ring; the GLOBAL items this node drops show in the scrape.
 */
class ClusterMetricsTest {

  private static final String SELF = "127.0.0.1:1";
  private static final String LEAVING = "127.0.0.2:1";
  private static final ClusterSettings SETTINGS =
      ClusterSettings.defaults().withHandoff(false).withPeerFailureMode(PeerFailureMode.REROUTE);

  private final FakeClock clock = new FakeClock(1_000_000);
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final InMemoryBucketStore store = new InMemoryBucketStore(clock);
  private final LocalLimiter local =
      new LocalLimiter(new RateLimitEngine(ZoneOffset.UTC), store, clock);
  private final ClusterNode node =
      new ClusterNode(
          SELF,
          SETTINGS,
          store,
          local::decide,
          scheduler,
          clock,
          null);
  private final PrometheusMeterRegistry registry =
      new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);

  @AfterEach
  void stop() {
    node.close();
  }

  @Test
  void peerLeaves_takenDownOneBatchTimeoutLater_noSeriesComeBack() {
    ClusterMetrics.watch(node, new MicrometerMetrics(registry));
    node.membership().accept(Set.of(SELF, LEAVING));
    String member = registry.scrape();

    node.announce(LEAVING, true);
    String departed = registry.scrape();
    scheduler.advance(SETTINGS.batchTimeout());

    // Nothing listens at the peer's address, so whether it already reads as down is a race.
    assertThat(member).contains("weir_peer_up{peer=\"127.0.0.2:1\"}");
    assertThat(departed).doesNotContain("peer=\"127.0.0.2:1\"");
    assertThat(node.liveness().isDown(LEAVING))
        .as("taken down one batch timeout after its notice")
        .isTrue();
    assertThat(registry.scrape()).doesNotContain("peer=\"127.0.0.2:1\"");
  }

  @Test
  void rerouteMode_peerDownThenDroppedByDiscovery_noSeriesLeft() throws Exception {
    ClusterMetrics.watch(node, new MicrometerMetrics(registry));
    Consumer<Set<String>> discovery = join();
    discovery.accept(Set.of(SELF, LEAVING));
    node.liveness().unreachable(LEAVING, "crashed");
    String down = registry.scrape();

    discovery.accept(Set.of(SELF));

    assertThat(node.membership().ring().peers())
        .as("taken off the ring while down")
        .containsExactly(SELF);
    assertThat(down).contains("weir_peer_up{peer=\"127.0.0.2:1\"} 0.0");
    assertThat(registry.scrape()).doesNotContain("peer=\"127.0.0.2:1\"");
  }

  @Test
  void globalHitsWithNoOwner_dropped_countedInTheScrape() throws Exception {
    ClusterMetrics.watch(node, new MicrometerMetrics(registry));
    String before = registry.scrape();

    node.global()
        .queueHits(
            RateLimitRequest.builder("n", "k")
                .hits(1)
                .limit(10)
                .duration(60_000)
                .behavior(Behavior.GLOBAL)
                .build());
    node.global().flushHits().get(5, TimeUnit.SECONDS);

    assertThat(node.membership().ring().isEmpty()).as("no owner").isTrue();
    assertThat(before).contains("weir_global_hits_dropped_total 0.0");
    assertThat(registry.scrape()).contains("weir_global_hits_dropped_total 1.0");
  }

  @SuppressWarnings("unchecked")
  private Consumer<Set<String>> join() throws Exception {
    Consumer<Set<String>>[] listener = (Consumer<Set<String>>[]) new Consumer<?>[1];
    node.join(
        new PeerDiscovery() {
          @Override
          public void start(Consumer<Set<String>> l) {
            listener[0] = l;
          }

          @Override
          public void close() {}
        });
    return listener[0];
  }
}
