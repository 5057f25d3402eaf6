package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerClient;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.ForwardingBucketStore;
import dev.weir.core.testkit.InMemoryBucketStore;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.time.ZoneOffset;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
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
  private final CountDownLatch scanning = new CountDownLatch(1);
  private final CountDownLatch release = new CountDownLatch(1);
  private final Map<String, AtomicInteger> channelsOpened = new ConcurrentHashMap<>();
  private final BlockingScanStore store = new BlockingScanStore(new InMemoryBucketStore(clock));
  private final LocalLimiter local =
      new LocalLimiter(new RateLimitEngine(ZoneOffset.UTC), store, clock);
  private final ClusterNode node =
      new ClusterNode(
          SELF,
          ClusterForwardingTest.SETTINGS,
          store,
          local::check,
          scheduler,
          clock,
          null,
          this::channel);
  private Server gone;

  @AfterEach
  void stop() {
    release.countDown();
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

    store.blockScans();
    node.membership().accept(Set.of(SELF, GONE));
    assertThat(scanning.await(10, TimeUnit.SECONDS)).as("the scan toward c:1 started").isTrue();
    node.membership().accept(Set.of(SELF));
    release.countDown();
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
      local.check(RateLimitRequest.builder("n", "k" + i).hits(1).limit(10).duration(600_000).build());
    }
  }

  private static java.util.List<String> addresses(ClusterNode node) {
    return node.peers().clients().stream().map(PeerClient::address).toList();
  }

  private ManagedChannel channel(String address) {
    channelsOpened.computeIfAbsent(address, a -> new AtomicInteger()).incrementAndGet();
    return InProcessChannelBuilder.forName(address).directExecutor().build();
  }

  /** A store whose {@code forEach}, once told to, waits until the test releases it. */
  private final class BlockingScanStore extends ForwardingBucketStore {
    private volatile boolean block;

    BlockingScanStore(InMemoryBucketStore delegate) {
      super(delegate);
    }

    void blockScans() {
      block = true;
    }

    @Override
    public void forEach(BiConsumer<String, BucketState> action) {
      if (block) {
        scanning.countDown();
        try {
          release.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      super.forEach(action);
    }
  }
}
