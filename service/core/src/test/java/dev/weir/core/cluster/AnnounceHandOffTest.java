package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.cluster.peer.PeerListener;
import dev.weir.core.cluster.peer.PeersService;
import dev.weir.core.cluster.peer.auth.PeerSecurity;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.health.ComponentHealth;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.IdlePeerHandler;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.testkit.LocalCluster.Node;
import dev.weir.core.time.SystemClock;
import dev.weir.proto.gubernator.AnnounceReq;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.PeersV1Grpc;
import dev.weir.ring.HashRing;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A node told of a membership change answers once its hand-off is done, without a thread waiting. */
class AnnounceHandOffTest {

  private LocalCluster cluster;
  private final CountDownLatch release = new CountDownLatch(1);

  private PeerListener bait;
  private ManagedChannel caller;

  @AfterEach
  void stop() {
    release.countDown();
    if (caller != null) {
      caller.shutdownNow();
    }
    if (bait != null) {
      bait.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void announceReturn_handOffPending_returnsAtOnceAndCompletesWhenTheHandOffDoes()
      throws Exception {
    cluster = LocalCluster.start(3, ClusterForwardingTest.SETTINGS);
    Node asked = cluster.node(0);
    Node returning = cluster.node(2);
    asked.cluster().announce(returning.address(), true).get(5, TimeUnit.SECONDS);
    java.util.Random random = new java.util.Random(7);
    for (int i = 0; i < 60; i++) {
      asked.check(
          RateLimitRequest.builder("h", Long.toHexString(random.nextLong()))
              .hits(1)
              .limit(10)
              .duration(600_000)
              .build());
    }
    returning.beforeAcceptBuckets(
        () -> {
          try {
            release.await(10, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });

    CompletableFuture<Void> answered = asked.cluster().announce(returning.address(), false);

    assertThat(answered).as("the hand-off to the returning node is still running").isNotDone();
    release.countDown();
    answered.get(5, TimeUnit.SECONDS);
    assertThat(asked.cluster().membership().ring().contains(returning.address())).isTrue();
  }

  /**
   * A joiner the peers' discovery does not list yet (Kubernetes lists a pod once it is ready, after
   * its join) still gets the counts of the keys it will own in its join, and the hand-over when the
   * peers list it adds only the hits taken on the old owner since that copy.
   */
  @Test
  void join_peersDoNotListTheJoinerYet_itStartsFromTheOldOwnersCountsAndTheListingCountsOnce()
      throws Exception {
    cluster = LocalCluster.start(2, ClusterForwardingTest.SETTINGS);
    Node joiner = cluster.startUnlisted();
    Set<String> withJoiner = new TreeSet<>(Set.of(joiner.address()));
    cluster.nodes().forEach(n -> withJoiner.add(n.address()));
    HashRing before = cluster.node(0).cluster().membership().ring();
    HashRing after = before.withPeers(withJoiner);
    String key = null;
    for (int i = 0; key == null; i++) {
      String hashKey = "h_k" + i;
      if (after.ownerOf(hashKey).equals(joiner.address())) {
        key = "k" + i;
      }
    }
    Node oldOwner = cluster.ownerOf("h_" + key);
    RateLimitRequest hit =
        RateLimitRequest.builder("h", key).hits(1).limit(10).duration(600_000).build();
    for (int i = 0; i < 5; i++) {
      oldOwner.check(hit);
    }

    joiner.cluster().join(discoveryOf(withJoiner));
    RateLimitResponse atJoiner = joiner.check(hit).get(0);
    RateLimitResponse atOldOwner = oldOwner.check(hit).get(0);
    cluster.list(joiner);
    cluster.nodes().forEach(n -> n.cluster().handOff().pending().join());
    RateLimitResponse afterListing = joiner.check(hit).get(0);

    assertThat(atJoiner.status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(atJoiner.remaining())
        .as("the joiner answers from the 5 hits its old owner copied to it, plus its own")
        .isEqualTo(4);
    assertThat(atOldOwner.remaining()).as("the old owner still owns the key on its ring").isEqualTo(4);
    assertThat(afterListing.remaining())
        .as("8 hits in all: the copied 5, one on the joiner, one on the old owner, this one")
        .isEqualTo(2);
  }

  /**
   * A node whose discovery answers only after its join (a first DNS lookup that failed: the node
   * alone, with a problem) asks the peers of the first set that lists others for its counts and
   * tells them it is back, as its join would have: the peers that marked it departed on its
   * SIGTERM put it back on their ring at once, not when the mark expires, and it answers its keys
   * from the counts they copied it.
   */
  @Test
  void join_discoveryListsThePeersOnlyAfterTheJoin_theNodeAsksForItsCountsAndAnnouncesItsReturn()
      throws Exception {
    FakeClock clock = new FakeClock();
    FakeScheduler timers = new FakeScheduler(clock);
    cluster = LocalCluster.startInFakeTime(3, ClusterForwardingTest.SETTINGS, clock, timers);
    Node returning = cluster.node(2);
    Node peer = cluster.node(0);
    String key = cluster.keyOwnedBy(returning, "h", "late");
    RateLimitRequest spend =
        RateLimitRequest.builder("h", key).hits(1).limit(10).duration(600_000).build();
    for (int i = 0; i < 10; i++) {
      returning.check(spend);
    }
    Set<String> all = new TreeSet<>();
    cluster.nodes().forEach(n -> all.add(n.address()));
    cluster.stop(returning);
    cluster.nodes().forEach(n -> n.cluster().handOff().pending().join());
    timers.advance(ClusterForwardingTest.SETTINGS.batchTimeout());
    LateDiscovery late = new LateDiscovery(returning.address());

    CountDownLatch copying = new CountDownLatch(1);
    peer.beforePrepareReturn(() -> awaitQuietly(copying));

    Node fresh = cluster.startAgain(returning, late);
    boolean servingAlone = fresh.cluster().serving();
    late.answers(all);
    ComponentHealth whileCopying = fresh.cluster().discoveryHealth().status();
    copying.countDown();

    assertThat(whileCopying.message())
        .as("readiness while its peer has not answered its request for copies")
        .startsWith(DiscoveryComponent.RETURNING);
    assertThat(whileCopying.healthy()).as("ready while copying: %s", whileCopying).isFalse();

    assertThat(
            Await.holdsWithin(
                ClusterForwardingTest.SETTINGS.batchTimeout(),
                () -> peer.cluster().membership().ring().contains(fresh.address())))
        .as("the node is back on its peer's ring within a batch timeout of its discovery answering")
        .isTrue();
    RateLimitResponse answer = fresh.check(spend).get(0);
    assertThat(answer.status())
        .as("the key spent before the restart, remaining %d", answer.remaining())
        .isEqualTo(Status.OVER_LIMIT);
    assertThat(servingAlone).as("answers probes before it has its counts").isFalse();
    assertThat(
            Await.holdsWithin(
                ClusterForwardingTest.SETTINGS.batchTimeout(),
                () -> fresh.cluster().discoveryHealth().status().healthy()))
        .as("joined once its return ended: %s", fresh.cluster().discoveryHealth().status())
        .isTrue();
  }

  /**
   * A node whose discovery answers only after its join has the counts of its keys from the copies
   * it asked its peers for, before any return notice is handled: here every return notice fails,
   * so no peer hands it the keys on its return.
   */
  @Test
  void join_discoveryListsThePeersOnlyAfterTheJoin_theNodeHasItsCountsFromTheCopies()
      throws Exception {
    LateDiscovery[] discovery = new LateDiscovery[1];
    FakeClock clock = new FakeClock();
    FakeScheduler timers = new FakeScheduler(clock);
    cluster = LocalCluster.startInFakeTime(3, ClusterForwardingTest.SETTINGS, clock, timers);
    Node returning = cluster.node(2);
    String key = cluster.keyOwnedBy(returning, "h", "copied");
    RateLimitRequest spend =
        RateLimitRequest.builder("h", key).hits(1).limit(10).duration(600_000).build();
    for (int i = 0; i < 10; i++) {
      returning.check(spend);
    }
    Set<String> all = new TreeSet<>();
    cluster.nodes().forEach(n -> all.add(n.address()));
    cluster.stop(returning);
    cluster.nodes().forEach(n -> n.cluster().handOff().pending().join());
    timers.advance(ClusterForwardingTest.SETTINGS.batchTimeout());
    for (Node n : cluster.nodes()) {
      if (n != returning) {
        n.beforeAnnounce(
            leaving -> {
              if (!leaving) {
                throw new IllegalStateException("return notice refused by the test");
              }
            });
      }
    }
    LateDiscovery late = new LateDiscovery(returning.address());
    Node fresh = cluster.startAgain(returning, late);

    late.answers(all);
    fresh.cluster().lateReturnEnded().get(10, TimeUnit.SECONDS);
    RateLimitResponse answer = fresh.check(spend).get(0);

    assertThat(answer.status())
        .as("the key spent before the restart, remaining %d", answer.remaining())
        .isEqualTo(Status.OVER_LIMIT);
  }

  /**
   * A node that joined alone while discovery failed and whose discovery then answers with this node
   * alone (the first etcd registrant, every pod of a Kubernetes deployment whose pods all started
   * together) serves and is ready, as a node that joined alone at once.
   */
  @Test
  void join_discoveryLaterListsOnlyThisNode_theNodeServesAndIsReady() throws Exception {
    Node fresh = startLate(late -> late.answers(Set.of(late.self)));

    assertServesAndIsReady(fresh);
  }

  /**
   * A node that joined alone while discovery failed, whose discovery then clears its problem
   * without a new set (a DNS lookup that now resolves to this node alone), serves and is ready.
   */
  @Test
  void join_discoveryLaterAnswersWithTheSameLoneSet_theNodeServesAndIsReady() throws Exception {
    Node fresh = startLate(LateDiscovery::clearsItsProblem);

    assertServesAndIsReady(fresh);
  }

  /**
   * A health check between a late discovery clearing its problem and delivering the peers it lists
   * (Kubernetes's order) does not make the node ready alone: the set that follows still runs its
   * return to them.
   */
  @Test
  void join_healthCheckBetweenDiscoveryClearingAndDelivering_doesNotJoinAlone() throws Exception {
    LateDiscovery[] discovery = new LateDiscovery[1];
    Node fresh = startLate(late -> discovery[0] = late);
    Set<String> all = new TreeSet<>();
    cluster.nodes().forEach(n -> all.add(n.address()));

    discovery[0].clearsItsProblem();
    ComponentHealth inTheGap = fresh.cluster().discoveryHealth().status();
    discovery[0].delivers(all);

    assertThat(inTheGap.healthy()).as("ready alone in the gap: %s", inTheGap).isFalse();
    Await.until(
        ClusterForwardingTest.SETTINGS.batchTimeout().multipliedBy(10),
        () -> cluster.node(0).returnNoticesHandled() > 0,
        "the node's return notice handled by its peer");
    Await.until(
        ClusterForwardingTest.SETTINGS.batchTimeout().multipliedBy(10),
        () -> fresh.cluster().discoveryHealth().status().healthy(),
        "the node ready once its return ended");
  }

  /**
   * Two health checks in a row that find the node alone with no discovery problem, while the set
   * its source delivered in between waits in the coalescer, do not make it ready alone: that set
   * still runs its return to the peers it lists.
   */
  @Test
  void join_twoHealthChecksWhileTheDeliveredSetIsCoalesced_doesNotJoinAlone() throws Exception {
    dev.weir.core.discovery.ManualScheduler window = new dev.weir.core.discovery.ManualScheduler();
    LateDiscovery[] discovery = new LateDiscovery[1];
    Node fresh =
        startLate(
            late -> {
              discovery[0] = late;
              return new dev.weir.core.discovery.CoalescedDiscovery(
                  late, window, dev.weir.core.discovery.CoalescingListener.DEFAULT_WINDOW);
            },
            late -> {});
    Set<String> all = new TreeSet<>();
    cluster.nodes().forEach(n -> all.add(n.address()));

    discovery[0].clearsItsProblem();
    fresh.cluster().discoveryHealth().status();
    discovery[0].delivers(all);
    ComponentHealth whileCoalesced = fresh.cluster().discoveryHealth().status();

    assertThat(whileCoalesced.healthy())
        .as("ready alone while its peers' set is coalesced: %s", whileCoalesced)
        .isFalse();
    window.advance(dev.weir.core.discovery.CoalescingListener.DEFAULT_WINDOW);
    Await.until(
        ClusterForwardingTest.SETTINGS.batchTimeout().multipliedBy(10),
        () -> cluster.node(0).returnNoticesHandled() > 0,
        "the node's return notice handled by its peer");
  }

  /**
   * A node that stops while its late return to the peers runs does not serve or join once that
   * return ends.
   */
  @Test
  void leave_whileTheLateReturnRuns_theNodeNeitherServesNorJoinsAfterwards() throws Exception {
    CountDownLatch copying = new CountDownLatch(1);
    CountDownLatch leaveNotice = new CountDownLatch(1);
    CountDownLatch leaveNoticeSent = new CountDownLatch(1);
    LateDiscovery[] discovery = new LateDiscovery[1];
    Node fresh = startLate(late -> discovery[0] = late);
    Set<String> all = new TreeSet<>();
    cluster.nodes().forEach(n -> all.add(n.address()));
    for (Node n : cluster.nodes()) {
      if (n != fresh) {
        n.beforePrepareReturn(() -> awaitQuietly(copying));
        n.beforeAnnounce(
            leaving -> {
              if (leaving) {
                leaveNoticeSent.countDown();
                awaitQuietly(leaveNotice);
              }
            });
      }
    }

    discovery[0].answers(all);
    CompletableFuture<Void> leave =
        CompletableFuture.runAsync(() -> fresh.cluster().leave(Duration.ofSeconds(5)));
    assertThat(leaveNoticeSent.await(10, TimeUnit.SECONDS)).as("leave notice sent").isTrue();
    copying.countDown();
    fresh.cluster().lateReturnEnded().get(10, TimeUnit.SECONDS);
    boolean servingAfter = fresh.cluster().serving();
    boolean joinedAfter = fresh.cluster().discoveryHealth().joined();
    leaveNotice.countDown();
    leave.get(10, TimeUnit.SECONDS);

    assertThat(servingAfter).as("serving after its leave began").isFalse();
    assertThat(joinedAfter).as("joined after its leave began").isFalse();
  }

  /** A leave with no wait does not wait for a return notice still unanswered either. */
  @Test
  void leave_withoutWaitWhileAReturnNoticeIsUnanswered_returnsAtOnce() throws Exception {
    CountDownLatch returnNoticeArrived = new CountDownLatch(1);
    CountDownLatch released = new CountDownLatch(1);
    LateDiscovery[] discovery = new LateDiscovery[1];
    Node fresh = startLate(late -> discovery[0] = late);
    Set<String> all = new TreeSet<>();
    cluster.nodes().forEach(n -> all.add(n.address()));
    cluster
        .node(0)
        .beforeAnnounce(
            leaving -> {
              if (!leaving) {
                returnNoticeArrived.countDown();
                try {
                  released.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              }
            });

    discovery[0].answers(all);
    assertThat(returnNoticeArrived.await(10, TimeUnit.SECONDS)).as("return notice sent").isTrue();
    long start = System.nanoTime();
    fresh.cluster().leave(Duration.ZERO);
    Duration took = Duration.ofNanos(System.nanoTime() - start);
    released.countDown();

    assertThat(took).as("leave(0) with a return notice unanswered").isLessThan(Duration.ofSeconds(1));
  }

  /**
   * A node that begins to leave while a return notice it sent is not yet answered sends its leave
   * notice only after that answer, when its leave's wait covers it: its peer handles the return
   * before the leave and ends with the node off its ring.
   */
  @Test
  void leave_whileAReturnNoticeIsUnanswered_thePeerHandlesTheReturnBeforeTheLeave()
      throws Exception {
    CountDownLatch returnNoticeArrived = new CountDownLatch(1);
    CountDownLatch leaveNoticeArrived = new CountDownLatch(1);
    List<String> handled = new java.util.concurrent.CopyOnWriteArrayList<>();
    LateDiscovery[] discovery = new LateDiscovery[1];
    Node fresh = startLate(late -> discovery[0] = late);
    Node peer = cluster.node(0);
    Set<String> all = new TreeSet<>();
    cluster.nodes().forEach(n -> all.add(n.address()));
    peer.beforeAnnounce(
        leaving -> {
          if (leaving) {
            handled.add("leave");
            leaveNoticeArrived.countDown();
          } else {
            returnNoticeArrived.countDown();
            try {
              leaveNoticeArrived.await(1, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
            handled.add("return");
          }
        });

    discovery[0].answers(all);
    assertThat(returnNoticeArrived.await(10, TimeUnit.SECONDS)).as("return notice sent").isTrue();
    fresh.cluster().leave(Duration.ofSeconds(5));

    assertThat(handled).as("notices in the order the peer handled them").containsExactly("return", "leave");
    assertThat(peer.cluster().membership().ring().contains(fresh.address()))
        .as("the leaving node on its peer's ring")
        .isFalse();
  }

  /**
   * A node whose discovery delivered its peers while still reporting a problem, so it returned to
   * them but has not joined, and which then begins to leave says it is leaving, not that it returns
   * to its peers.
   */
  @Test
  void leave_beforeJoiningWithPeersListed_readinessSaysItIsLeaving() throws Exception {
    LateDiscovery[] discovery = new LateDiscovery[1];
    Node fresh = startLate(late -> discovery[0] = late);
    Set<String> all = new TreeSet<>();
    cluster.nodes().forEach(n -> all.add(n.address()));
    discovery[0].delivers(all);
    fresh.cluster().lateReturnEnded().get(10, TimeUnit.SECONDS);
    ComponentHealth before = fresh.cluster().discoveryHealth().status();

    CountDownLatch leaveNoticeArrived = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    cluster
        .node(0)
        .beforeAnnounce(
            leaving -> {
              if (leaving) {
                leaveNoticeArrived.countDown();
                awaitQuietly(release);
              }
            });

    CompletableFuture<Void> leave =
        CompletableFuture.runAsync(() -> fresh.cluster().leave(Duration.ofSeconds(5)));
    assertThat(leaveNoticeArrived.await(10, TimeUnit.SECONDS)).as("leave notice sent").isTrue();
    ComponentHealth whileLeaving = fresh.cluster().discoveryHealth().status();
    release.countDown();
    leave.get(10, TimeUnit.SECONDS);
    ComponentHealth afterLeaving = fresh.cluster().discoveryHealth().status();

    assertThat(before.message()).startsWith(DiscoveryComponent.WAITING_FOR_SOURCE);
    assertThat(whileLeaving.message())
        .as("readiness of a node leaving before it joined")
        .startsWith(DiscoveryComponent.LEAVING);
    assertThat(afterLeaving.message())
        .as("readiness of a node that left before it joined")
        .startsWith(DiscoveryComponent.LEAVING);
    assertThat(whileLeaving.healthy()).isFalse();
    assertThat(afterLeaving.healthy()).isFalse();
  }

  // Starts a 3-node cluster in fake time, stops node 2 and starts it again through a late
  // discovery, which then acts as {@code then} says.
  private Node startLate(java.util.function.Consumer<LateDiscovery> then) {
    return startLate(late -> late, then);
  }

  // As above, starting the node through the discovery {@code wrap} makes of the late one.
  private Node startLate(
      java.util.function.Function<LateDiscovery, PeerDiscovery> wrap,
      java.util.function.Consumer<LateDiscovery> then) {
    FakeClock clock = new FakeClock();
    FakeScheduler timers = new FakeScheduler(clock);
    cluster = LocalCluster.startInFakeTime(3, ClusterForwardingTest.SETTINGS, clock, timers);
    Node stopped = cluster.node(2);
    cluster.stop(stopped);
    cluster.nodes().forEach(n -> n.cluster().handOff().pending().join());
    timers.advance(ClusterForwardingTest.SETTINGS.batchTimeout());
    LateDiscovery late = new LateDiscovery(stopped.address());
    Node fresh = cluster.startAgain(stopped, wrap.apply(late));
    then.accept(late);
    return fresh;
  }

  /** Asserts that {@code fresh} is ready within ten batch timeouts and answers probes. */
  private static void assertServesAndIsReady(Node fresh) throws InterruptedException {
    assertThat(
            Await.holdsWithin(
                ClusterForwardingTest.SETTINGS.batchTimeout().multipliedBy(10),
                () -> fresh.cluster().discoveryHealth().status().healthy()))
        .as("ready: %s", fresh.cluster().discoveryHealth().status())
        .isTrue();
    assertThat(fresh.cluster().serving()).as("answers probes").isTrue();
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * A discovery whose first lookup failed: its start delivers this node alone while it reports a
   * problem; {@link #answers} delivers the peers its source then lists and clears the problem.
   */
  private static final class LateDiscovery implements PeerDiscovery {
    private final String self;
    private volatile java.util.function.Consumer<Set<String>> listener;
    private volatile String problem = "DNS lookup of weir-peers failed (no answer)";

    LateDiscovery(String self) {
      this.self = self;
    }

    @Override
    public void start(java.util.function.Consumer<Set<String>> l) {
      listener = l;
      l.accept(Set.of(self));
    }

    void answers(Set<String> peers) {
      clearsItsProblem();
      delivers(peers);
    }

    void clearsItsProblem() {
      problem = "";
    }

    void delivers(Set<String> peers) {
      listener.accept(Set.copyOf(peers));
    }

    @Override
    public String problem() {
      return problem;
    }

    @Override
    public void close() {}
  }

  /**
   * Whoever reaches the peer port (here without a secret: {@code WEIR_PEER_INSECURE=true}) cannot
   * make a node copy buckets to an address discovery does not list on another IP than its own: the
   * notice is refused naming the field, the value and the caller's IP, and the node never calls the
   * address.
   */
  @Test
  void prepareReturn_unlistedAddressOnAnotherIp_isRefusedAndTheNodeNeverCallsIt() throws Exception {
    cluster = insecureCluster();
    AtomicInteger baitCalls = new AtomicInteger();
    AtomicInteger baitBuckets = new AtomicInteger();
    bait = baitAt("127.0.0.2", baitCalls, baitBuckets);
    String baitAddress = "127.0.0.2:" + bait.port();
    Node asked = cluster.node(0);
    hitKeysMovingTo(asked, baitAddress);

    assertThatThrownBy(() -> prepareReturn(asked, baitAddress))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(io.grpc.Status.Code.INVALID_ARGUMENT);
              assertThat(e.getStatus().getDescription())
                  .contains("'address'", "'" + baitAddress + "'", "127.0.0.1")
                  .contains("may only ask for a copy to itself");
            });
    assertThat(asked.metrics().count("refused peer_invalid_input")).isEqualTo(1);
    assertThat(asked.cluster().peers().clients())
        .as("no client for the unlisted address")
        .noneMatch(c -> c.address().equals(baitAddress));
    assertThat(baitCalls).as("calls the unlisted address received").hasValue(0);
    assertThat(baitBuckets).hasValue(0);
  }

  /**
   * A node discovery does not list yet that asks, from its own IP, for the copy to itself gets it.
   */
  @Test
  void prepareReturn_unlistedAddressOnTheCallersIp_getsItsCopy() throws Exception {
    cluster = insecureCluster();
    AtomicInteger baitCalls = new AtomicInteger();
    AtomicInteger baitBuckets = new AtomicInteger();
    bait = baitAt("127.0.0.1", baitCalls, baitBuckets);
    String joinerAddress = "127.0.0.1:" + bait.port();
    Node asked = cluster.node(0);
    int hit = hitKeysMovingTo(asked, joinerAddress);

    prepareReturn(asked, joinerAddress);

    assertThat(baitBuckets).as("buckets copied to the joiner").hasValue(hit);
    assertThat(asked.cluster().peers().clients())
        .as("clients once the copy to the unlisted address ended")
        .noneMatch(c -> c.address().equals(joinerAddress));
  }

  /**
   * A copy to an address discovery does not list that fails leaves nothing behind: the address is
   * neither tracked as down (probed, checked through other peers) nor given a client.
   */
  @Test
  void prepareReturn_unlistedAddressNotAnswering_isForgottenOnceTheCopyEnded() throws Exception {
    // A batch timeout of 250 ms: the copy to the closed port gives up after 1 s, not 20 s.
    cluster =
        insecureCluster(
            new ClusterSettings(
                512, ClusterSettings.defaults().hash(), 1000, Duration.ofNanos(500_000),
                Duration.ofMillis(250), false, Duration.ofMillis(100), 1000,
                Duration.ofSeconds(5), "static", List.of(), true));
    bait = baitAt("127.0.0.1", new AtomicInteger(), new AtomicInteger());
    String joinerAddress = "127.0.0.1:" + bait.port();
    bait.close();
    bait = null;
    Node asked = cluster.node(0);
    hitKeysMovingTo(asked, joinerAddress);

    prepareReturn(asked, joinerAddress);
    // The answer comes after the 1 s hand-off wait, the failed copy's last leg around then too.
    Await.holdsWithin(
        Duration.ofSeconds(10),
        () ->
            !asked.cluster().liveness().down().contains(joinerAddress)
                && asked.cluster().peers().clients().stream()
                    .noneMatch(c -> c.address().equals(joinerAddress)));

    assertThat(asked.cluster().liveness().down())
        .as("peers found down once the copy to the unlisted address ended")
        .doesNotContain(joinerAddress);
    assertThat(asked.cluster().liveness().unanswered()).doesNotContain(joinerAddress);
    assertThat(asked.cluster().peers().clients())
        .noneMatch(c -> c.address().equals(joinerAddress));
  }

  private static LocalCluster insecureCluster() {
    return insecureCluster(ClusterForwardingTest.SETTINGS);
  }

  private static LocalCluster insecureCluster(ClusterSettings settings) {
    RateLimitEngine engine = new RateLimitEngine(ZoneOffset.UTC);
    return LocalCluster.start(
        2,
        settings,
        SystemClock.INSTANCE,
        store -> new LocalLimiter(engine, store, SystemClock.INSTANCE)::decide,
        PeerSecurity.insecure());
  }

  /**
   * Starts a peer listener on {@code host} that counts the calls it receives and the buckets handed
   * to it.
   */
  private static PeerListener baitAt(String host, AtomicInteger calls, AtomicInteger buckets)
      throws Exception {
    IdlePeerHandler handler =
        new IdlePeerHandler() {
          @Override
          public int acceptBuckets(List<BucketSnapshot> handed, String from) {
            buckets.addAndGet(handed.size());
            return handed.size();
          }
        };
    return PeerListener.start(
        new InetSocketAddress(host, 0),
        new PeersService(handler, SystemClock.INSTANCE),
        PeerSecurity.insecure(),
        WeirMetrics.NOOP,
        InputLimits.DEFAULT_MAX_MESSAGE_BYTES,
        new io.grpc.ServerInterceptor() {
          @Override
          public <Q, A> io.grpc.ServerCall.Listener<Q> interceptCall(
              io.grpc.ServerCall<Q, A> call,
              io.grpc.Metadata headers,
              io.grpc.ServerCallHandler<Q, A> next) {
            calls.incrementAndGet();
            return next.startCall(call, headers);
          }
        });
  }

  /**
   * Hits on {@code node} 5 keys it owns that {@code address} would own once on its ring; returns
   * how many.
   */
  private static int hitKeysMovingTo(Node node, String address) {
    HashRing now = node.cluster().membership().ring();
    Set<String> with = new TreeSet<>(now.peers());
    with.add(address);
    HashRing back = now.withPeers(with);
    int hit = 0;
    for (int i = 0; hit < 5; i++) {
      String hashKey = "h_m" + i;
      if (now.ownerOf(hashKey).equals(node.address()) && back.ownerOf(hashKey).equals(address)) {
        node.check(RateLimitRequest.builder("h", "m" + i).hits(1).limit(10).duration(600_000).build());
        hit++;
      }
    }
    return hit;
  }

  /** Sends {@code node}, from 127.0.0.1, the notice that {@code address} prepares its return. */
  private void prepareReturn(Node node, String address) {
    caller =
        NettyChannelBuilder.forAddress("127.0.0.1", Integer.parseInt(node.address().split(":")[1]))
            .usePlaintext()
            .build();
    PeersV1Grpc.newBlockingStub(caller)
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .announce(AnnounceReq.newBuilder().setAddress(address).setPrepareReturn(true).build());
  }

  /** A discovery that delivers {@code peers} during its start, as Kubernetes discovery does. */
  private static PeerDiscovery discoveryOf(Set<String> peers) {
    return new PeerDiscovery() {
      @Override
      public void start(java.util.function.Consumer<Set<String>> listener) {
        listener.accept(Set.copyOf(peers));
      }

      @Override
      public void close() {}
    };
  }
}
