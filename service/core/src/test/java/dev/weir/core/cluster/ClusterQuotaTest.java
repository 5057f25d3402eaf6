package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.model.Algorithm;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.quota.QuotaClients;
import dev.weir.core.quota.QuotaPush;
import dev.weir.core.quota.QuotaShare;
import dev.weir.core.quota.QuotaUsage;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.testkit.LocalCluster.Node;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Quota sharing across a three-node in-JVM cluster (real peer listeners on loopback, fake time):
 * usage goes to the owner of its bucket's counter whichever node the proxy's stream is on, and the
 * owner's pushes reach the node of each proxy's stream.
 */
class ClusterQuotaTest {

  private static final long INTERVAL = 5000;
  private static final RateLimitRequest RULE =
      RateLimitRequest.builder("rlqs/r", "k=v")
          .limit(6000)
          .duration(60_000)
          .algorithm(Algorithm.FIXED_WINDOW)
          .build();

  private final FakeClock clock = new FakeClock();
  private final Map<String, List<QuotaPush>> received = new ConcurrentHashMap<>();
  private LocalCluster cluster;

  private void start(int nodes) {
    RateLimitEngine engine = new RateLimitEngine(ZoneOffset.UTC);
    cluster =
        LocalCluster.start(
            nodes,
            ClusterForwardingTest.SETTINGS,
            clock,
            store -> new LocalLimiter(engine, store, clock)::decide,
            null,
            new FakeScheduler(clock));
    for (Node n : cluster.nodes()) {
      List<QuotaPush> inbox = new CopyOnWriteArrayList<>();
      received.put(n.address(), inbox);
      n.cluster()
          .quota()
          .receiveWith(
              pushes -> {
                inbox.addAll(pushes);
                return pushes.size();
              });
    }
  }

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static QuotaShare report(Node via, String client, long allowed, long elapsed) {
    return via.cluster()
        .quota()
        .report(new QuotaUsage(RULE, client, allowed, 0, elapsed, INTERVAL, false))
        .join();
  }

  @Test
  void usageOnANonOwner_isAnsweredByTheOwner() {
    start(3);
    Node owner = cluster.ownerOf(RULE.hashKey());
    Node other = cluster.nonOwnersOf(RULE.hashKey()).get(0);

    QuotaShare share = report(other, QuotaClients.name(other.address(), "1"), 1, 0);

    assertThat(share.isError()).isFalse();
    assertThat(share.ratePerSecond()).isGreaterThan(90);
    assertThat(owner.callsReceived("ReportQuotaUsage")).isEqualTo(1);
    assertThat(owner.cluster().quotaOwner().buckets()).isEqualTo(1);
    assertThat(other.cluster().quotaOwner().buckets()).isZero();
  }

  @Test
  void aJoiningProxy_makesTheOwnerPushALowerShareToTheOtherProxysNode() throws Exception {
    start(3);
    List<Node> others = cluster.nonOwnersOf(RULE.hashKey());
    Node first = others.get(0);
    Node second = others.get(1);
    String a = QuotaClients.name(first.address(), "a");
    QuotaShare alone = report(first, a, 250, INTERVAL);

    QuotaShare joined = report(second, QuotaClients.name(second.address(), "b"), 1, 0);

    Await.until(
        Duration.ofSeconds(10), () -> !received.get(first.address()).isEmpty(), "push to " + a);
    QuotaPush push = received.get(first.address()).get(0);
    assertThat(push.client()).isEqualTo(a);
    assertThat(push.key()).isEqualTo(RULE.hashKey());
    assertThat(push.share().milliRate()).isLessThan(alone.milliRate());
    assertThat(push.share().isNewerThan(alone)).isTrue();
    assertThat(push.share().milliRate() + joined.milliRate())
        .isLessThanOrEqualTo(alone.milliRate());
    assertThat(received.get(second.address())).isEmpty();
  }

  @Test
  void ownerLeaving_countsMoveAndTheNextOwnerSharesWhatRemains() {
    start(3);
    Node owner = cluster.ownerOf(RULE.hashKey());
    Node stream = cluster.nonOwnersOf(RULE.hashKey()).get(0);
    String client = QuotaClients.name(stream.address(), "1");
    report(stream, client, 1, 0);
    clock.advanceMillis(INTERVAL);
    report(stream, client, 3000, INTERVAL);

    cluster.removeNode(owner);
    clock.advanceMillis(INTERVAL);
    QuotaShare after = report(stream, client, 0, INTERVAL);

    Node next = cluster.ownerOf(RULE.hashKey());
    assertThat(next).isNotSameAs(owner);
    assertThat(next.cluster().quotaOwner().buckets()).isEqualTo(1);
    assertThat(after.isError()).isFalse();
    assertThat(after.ratePerSecond())
        .as("what remains of 6000 after 3001, over the 50 s left")
        .isLessThan(3000 / 50.0 + 1);
  }
}
