package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerFailureMode;
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
import dev.weir.ring.HashRing;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
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

  // Random keys: FNV-1a places keys that differ only in their last characters close together.
  private static final List<String> KEYS =
      new Random(11).longs(60).mapToObj(Long::toHexString).toList();

  private final FakeClock clock = new FakeClock();
  private final Map<String, List<QuotaPush>> received = new ConcurrentHashMap<>();
  private LocalCluster cluster;

  private void start(int nodes) {
    start(nodes, ClusterForwardingTest.SETTINGS);
  }

  private void start(int nodes, ClusterSettings settings) {
    RateLimitEngine engine = new RateLimitEngine(ZoneOffset.UTC);
    cluster =
        LocalCluster.start(
            nodes,
            settings,
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
    return report(via, RULE, client, allowed, elapsed);
  }

  private static QuotaShare report(
      Node via, RateLimitRequest rule, String client, long allowed, long elapsed) {
    return via.cluster()
        .quota()
        .report(new QuotaUsage(rule, client, allowed, 0, elapsed, INTERVAL, false))
        .join();
  }

  /**
   * Sends {@code usage} from {@code from} to {@code to}, as the node of a proxy's stream whose ring
   * names {@code to} the owner.
   */
  private static QuotaShare reportTo(Node from, Node to, QuotaUsage usage) {
    return from.cluster().peers().call(to.address(), c -> c.reportQuota(usage)).join();
  }

  private static RateLimitRequest rule(String uniqueKey) {
    return RateLimitRequest.builder("rlqs/r", uniqueKey)
        .limit(6000)
        .duration(60_000)
        .algorithm(Algorithm.FIXED_WINDOW)
        .build();
  }

  /**
   * Adds a node and returns a rule whose counter {@code old} owned and the added node owns now,
   * once every hand-off ended; {@code joined} receives the added node.
   */
  private RateLimitRequest joinAndFindMovedRule(Node old, Node[] joined) {
    HashRing before = old.cluster().membership().ring();
    joined[0] = cluster.addNode();
    cluster.nodes().forEach(n -> n.cluster().handOff().pending().join());
    HashRing now = old.cluster().membership().ring();
    return KEYS.stream()
        .map(ClusterQuotaTest::rule)
        .filter(r -> before.ownerOf(r.hashKey()).equals(old.address()))
        .filter(r -> now.ownerOf(r.hashKey()).equals(joined[0].address()))
        .findFirst()
        .orElseThrow();
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

  @Test
  void usageSentToAnOwnerThatHandedTheCounterOver_isCountedAndAnsweredByTheNewOwner() {
    start(2);
    Node old = cluster.node(0);
    Node stale = cluster.node(1);
    Node[] joined = new Node[1];
    RateLimitRequest moved = joinAndFindMovedRule(old, joined);
    String client = QuotaClients.name(stale.address(), "1");
    clock.advanceMillis(INTERVAL);

    QuotaShare first =
        reportTo(stale, old, new QuotaUsage(moved, client, 3000, 0, INTERVAL, INTERVAL, false));
    clock.advanceMillis(INTERVAL);
    QuotaShare next = report(joined[0], moved, client, 0, INTERVAL);

    assertThat(first.isError()).as(first.error()).isFalse();
    assertThat(old.cluster().quotaOwner().buckets()).as("ledgers on the old owner").isZero();
    assertThat(joined[0].cluster().quotaOwner().buckets()).isEqualTo(1);
    assertThat(next.isNewerThan(first)).as("both shares from the new owner's ledger").isTrue();
    assertThat(next.epoch()).isEqualTo(first.epoch());
    assertThat(next.ratePerSecond())
        .as("what remains of 6000 after 3000, over the 50 s left")
        .isLessThan(3000 / 50.0 + 1);
  }

  @Test
  void ringsThatDisagree_usageIsHandedOnOnceAndCountedWhereItArrives() {
    start(3);
    Node a = cluster.node(0);
    Node b = cluster.node(1);
    Node c = cluster.node(2);
    ClusterHandOnTest.makeRingsDisagree(a, b, c);
    HashRing atA = a.cluster().membership().ring();
    HashRing atB = b.cluster().membership().ring();
    RateLimitRequest rule =
        KEYS.stream()
            .map(ClusterQuotaTest::rule)
            .filter(r -> atA.ownerOf(r.hashKey()).equals(b.address()))
            .filter(r -> atB.ownerOf(r.hashKey()).equals(a.address()))
            .findFirst()
            .orElseThrow();
    String client = QuotaClients.name(c.address(), "1");

    QuotaShare share =
        reportTo(c, a, new QuotaUsage(rule, client, 10, 0, 0, INTERVAL, false));

    assertThat(share.isError()).as(share.error()).isFalse();
    assertThat(a.callsReceived("ReportQuotaUsage")).isEqualTo(1);
    assertThat(b.callsReceived("ReportQuotaUsage")).isEqualTo(1);
    assertThat(b.cluster().quotaOwner().buckets()).isEqualTo(1);
    assertThat(a.cluster().quotaOwner().buckets()).isZero();
    assertThat(b.store().get(rule.hashKey())).isPresent();
    assertThat(a.store().get(rule.hashKey())).isEmpty();
  }

  @Test
  void theNewOwnerCannotBeCalled_theOldOwnerAnswersTheUsageItselfRatherThanFail() {
    // With WEIR_PEER_FAILURE_MODE=fail a dead owner stays on the ring: the hand-on fails.
    start(2, ClusterForwardingTest.SETTINGS.withPeerFailureMode(PeerFailureMode.FAIL));
    Node old = cluster.node(0);
    Node stale = cluster.node(1);
    Node[] joined = new Node[1];
    RateLimitRequest moved = joinAndFindMovedRule(old, joined);
    cluster.kill(joined[0]);
    assertThat(old.cluster().membership().ring().ownerOf(moved.hashKey()))
        .isEqualTo(joined[0].address());
    String client = QuotaClients.name(stale.address(), "1");

    QuotaShare share =
        reportTo(stale, old, new QuotaUsage(moved, client, 10, 0, 0, INTERVAL, false));

    assertThat(share.isError()).as(share.error()).isFalse();
    assertThat(old.cluster().quotaOwner().buckets()).isEqualTo(1);
  }

  @Test
  void handOffOff_theOldOwnerAnswersTheUsageItself() {
    start(2, ClusterForwardingTest.SETTINGS.withHandoff(false));
    Node old = cluster.node(0);
    Node stale = cluster.node(1);
    Node[] joined = new Node[1];
    RateLimitRequest moved = joinAndFindMovedRule(old, joined);
    String client = QuotaClients.name(stale.address(), "1");

    QuotaShare share =
        reportTo(stale, old, new QuotaUsage(moved, client, 10, 0, 0, INTERVAL, false));

    assertThat(share.isError()).as(share.error()).isFalse();
    assertThat(old.cluster().quotaOwner().buckets()).isEqualTo(1);
    assertThat(joined[0].cluster().quotaOwner().buckets()).isZero();
  }

  @Test
  void theNewOwnerAnswersAfterTheHandOnDeadline_theUsageIsCountedThereOnlyAndTheSenderGetsAnError()
      throws Exception {
    // The hand-on's deadline is half the batch timeout: 500 ms here.
    start(
        2,
        new ClusterSettings(
            512, ClusterSettings.defaults().hash(), 1000, Duration.ofNanos(500_000),
            Duration.ofSeconds(1), false, Duration.ofMillis(100), 1000, Duration.ofSeconds(5),
            "static", List.of(), true));
    Node old = cluster.node(0);
    Node stale = cluster.node(1);
    Node[] joined = new Node[1];
    RateLimitRequest moved = joinAndFindMovedRule(old, joined);
    String client = QuotaClients.name(stale.address(), "1");
    CountDownLatch senderAnswered = new CountDownLatch(1);
    joined[0].beforeAnswerQuotaUsage(
        () -> {
          try {
            senderAnswered.await(10, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });

    QuotaShare share;
    try {
      share = reportTo(stale, old, new QuotaUsage(moved, client, 10, 0, 0, INTERVAL, false));
    } finally {
      senderAnswered.countDown();
    }
    Await.until(
        Duration.ofSeconds(10),
        () -> joined[0].cluster().quotaOwner().buckets() == 1,
        "the new owner counts the late usage");

    assertThat(old.cluster().quotaOwner().buckets()).as("ledgers on the old owner").isZero();
    assertThat(old.store().get(moved.hashKey())).as("count on the old owner").isEmpty();
    assertThat(joined[0].store().get(moved.hashKey())).isPresent();
    assertThat(share.isError()).as("the share answering usage counted elsewhere").isTrue();
    assertThat(share.error()).contains(joined[0].address());
  }
}
