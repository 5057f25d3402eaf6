package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerClient;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.ScanHoldingStore;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.time.ZoneOffset;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A peer that discovery drops leaves no client behind: not when a hand-off scan toward it runs after
 * the drop (the scan runs on its own thread, later than the ring change that started it), and not
 * when it was already off the ring, down, as a crashed pod is before it leaves the endpoints.
 */
class ClusterNodeDroppedPeerTest {

  private static final String SELF = "a:1";
  private static final String GONE = "c:1";

  private final FakeClock clock = new FakeClock(1_000_000);
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final Map<String, AtomicInteger> channelsOpened = new ConcurrentHashMap<>();
  private final ScanHoldingStore store = new ScanHoldingStore(new InMemoryBucketStore(clock));
  private final LocalLimiter local =
      new LocalLimiter(new RateLimitEngine(ZoneOffset.UTC), store, clock);
  private final ClusterNode node =
      new ClusterNode(
          SELF,
          ClusterForwardingTest.SETTINGS,
          store,
          local::decide,
          scheduler,
          clock,
          null,
          this::channel);
  private Server gone;

  @AfterEach
  void stop() {
    store.release();
    node.close();
    if (gone != null) {
      gone.shutdownNow();
    }
  }

  @Test
  void handOffScan_targetDroppedBeforeTheScanRuns_noClientOpenedForIt() throws Exception {
    gone = InProcessServerBuilder.forName(GONE).directExecutor().build().start();
    node.membership().accept(Set.of(SELF));
    takeHits();

    store.hold();
    node.membership().accept(Set.of(SELF, GONE));
    assertThat(store.awaitScanning(10)).as("the scan toward c:1 started").isTrue();
    node.membership().accept(Set.of(SELF));
    store.release();
    node.handOff().pending().get(10, TimeUnit.SECONDS);

    assertThat(addresses(node)).doesNotContain(GONE);
    assertThat(channelsOpened.get(GONE))
        .as("only the client opened while c:1 was discovered")
        .hasValue(1);
    for (int i = 0; i < 50; i++) {
      assertThat(store.get(RateLimitRequest.builder("n", "k" + i).build().hashKey()))
          .as("bucket k%d stays with this node", i)
          .isPresent();
    }
  }

  @Test
  void discovery_dropsAPeerThatIsDownAndOffTheRing_itsClientIsClosed() throws Exception {
    Consumer<Set<String>>[] discovered = captureDiscovery();
    discovered[0].accept(Set.of(SELF, GONE));
    assertThat(node.liveness().isDown(GONE)).as("nothing listens at c:1").isTrue();
    assertThat(node.membership().ring().peers()).containsExactly(SELF);
    assertThat(addresses(node)).contains(GONE);

    discovered[0].accept(Set.of(SELF));

    assertThat(addresses(node)).doesNotContain(GONE);
  }

  @SuppressWarnings("unchecked")
  private Consumer<Set<String>>[] captureDiscovery() throws Exception {
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
    return listener;
  }

  private void takeHits() {
    for (int i = 0; i < 50; i++) {
      local.decide(RateLimitRequest.builder("n", "k" + i).hits(1).limit(10).duration(600_000).build());
    }
  }

  private static java.util.List<String> addresses(ClusterNode node) {
    return node.peers().clients().stream().map(PeerClient::address).toList();
  }

  private ManagedChannel channel(String address) {
    channelsOpened.computeIfAbsent(address, a -> new AtomicInteger()).incrementAndGet();
    return InProcessChannelBuilder.forName(address).directExecutor().build();
  }
}
