package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerLiveness;
import dev.weir.core.discovery.StaticDiscovery;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class MembershipTest {

  private final Membership membership =
      new Membership(HashRing.of(List.of(), 16, PeerHash.FNV1A));
  private final List<List<String>> changes = new ArrayList<>();

  {
    membership.addListener((before, after) -> changes.add(after.peers()));
  }

  @Test
  void accept_newSet_ringSwappedAndListenersToldOnce() {
    membership.accept(Set.of("b:1", "a:1"));
    membership.accept(Set.of("a:1", "b:1"));
    assertThat(membership.ring().peers()).containsExactly("a:1", "b:1");
    assertThat(changes).containsExactly(List.of("a:1", "b:1"));
  }

  @Test
  void delivered_whileAnotherThreadTellsAnEarlierChange_completesOnlyOnceThisChangeWasTold()
      throws Exception {
    Membership slow = new Membership(HashRing.of(List.of(), 16, PeerHash.FNV1A));
    java.util.concurrent.CountDownLatch telling = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    List<List<String>> told = new java.util.concurrent.CopyOnWriteArrayList<>();
    slow.addListener(
        (before, after) -> {
          told.add(after.peers());
          if (after.peers().size() == 1) {
            telling.countDown();
            try {
              release.await();
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }
        });
    Thread first = new Thread(() -> slow.accept(Set.of("a:1")));
    first.start();
    assertThat(telling.await(5, java.util.concurrent.TimeUnit.SECONDS)).isTrue();

    slow.accept(Set.of("a:1", "b:1"));
    java.util.concurrent.CompletableFuture<Void> delivered = slow.delivered();

    assertThat(delivered).as("the other thread has not told the second change yet").isNotDone();
    release.countDown();
    delivered.get(5, java.util.concurrent.TimeUnit.SECONDS);
    assertThat(told).containsExactly(List.of("a:1"), List.of("a:1", "b:1"));
    first.join(5_000);
    assertThat(slow.delivered()).isDone();
  }

  @Test
  void accept_listenerChangesTheRingWhileTold_everyListenerHearsTheChangesInOrder() {
    Membership nested = new Membership(HashRing.of(List.of(), 16, PeerHash.FNV1A));
    List<List<String>> first = new ArrayList<>();
    List<List<String>> last = new ArrayList<>();
    nested.addListener(
        (before, after) -> {
          first.add(after.peers());
          if (after.peers().size() == 2) {
            nested.departed("b:1");
          }
        });
    nested.addListener((before, after) -> last.add(after.peers()));

    nested.accept(Set.of("a:1", "b:1"));

    assertThat(first).containsExactly(List.of("a:1", "b:1"), List.of("a:1"));
    assertThat(last)
        .as("the change made by the first listener reaches the last one after the change it reacted to")
        .containsExactly(List.of("a:1", "b:1"), List.of("a:1"));
  }

  @Test
  void departed_thenReturned_peerLeavesAndComesBack() {
    membership.accept(Set.of("a:1", "b:1", "c:1"));
    membership.departed("b:1");
    assertThat(membership.ring().peers()).containsExactly("a:1", "c:1");
    membership.accept(Set.of("a:1", "b:1", "c:1", "d:1"));
    assertThat(membership.ring().peers()).doesNotContain("b:1");
    membership.returned("b:1");
    assertThat(membership.ring().peers()).containsExactly("a:1", "b:1", "c:1", "d:1");
  }

  @Test
  void departed_noReturnWithinTtl_peerBackOnRingByItself() {
    FakeClock clock = new FakeClock();
    FakeScheduler scheduler = new FakeScheduler(clock);
    Membership expiring =
        new Membership(
            HashRing.of(List.of(), 16, PeerHash.FNV1A), "a:1", clock, scheduler, Duration.ofSeconds(30));
    expiring.accept(Set.of("a:1", "b:1", "c:1"));
    expiring.departed("b:1");

    scheduler.advance(Duration.ofSeconds(29));
    assertThat(expiring.ring().peers()).containsExactly("a:1", "c:1");
    scheduler.advance(Duration.ofSeconds(1));
    assertThat(expiring.ring().peers()).containsExactly("a:1", "b:1", "c:1");
  }

  @Test
  void departed_markExpiresWhileThePeerIsStillDown_staysOffUntilItAnswers() {
    FakeClock clock = new FakeClock();
    FakeScheduler scheduler = new FakeScheduler(clock);
    PeerLiveness liveness = new PeerLiveness(clock);
    Membership expiring =
        new Membership(
            HashRing.of(List.of(), 16, PeerHash.FNV1A),
            "a:1",
            clock,
            scheduler,
            Duration.ofSeconds(30),
            liveness::down);
    expiring.accept(Set.of("a:1", "b:1", "c:1"));
    liveness.left("b:1");
    expiring.departed("b:1");

    scheduler.advance(Duration.ofSeconds(31));
    assertThat(expiring.ring().peers()).containsExactly("a:1", "c:1");
    assertThat(expiring.members()).containsExactly("a:1", "b:1", "c:1");
    liveness.back("b:1");
    expiring.refresh();
    assertThat(expiring.ring().peers()).containsExactly("a:1", "b:1", "c:1");
  }

  @Test
  void refresh_peerDownThenUp_offTheRingMeanwhileStillAMember() {
    FakeClock clock = new FakeClock();
    PeerLiveness liveness = new PeerLiveness(clock);
    Membership live =
        new Membership(
            HashRing.of(List.of(), 16, PeerHash.FNV1A),
            "a:1",
            clock,
            new FakeScheduler(clock),
            Duration.ofSeconds(30),
            liveness::down);
    live.accept(Set.of("a:1", "b:1", "c:1"));

    liveness.unreachable("c:1", "refused");
    live.refresh();
    List<String> whileDown = live.ring().peers();
    liveness.back("c:1");
    live.refresh();

    assertThat(whileDown).containsExactly("a:1", "b:1");
    assertThat(live.ring().peers()).containsExactly("a:1", "b:1", "c:1");
    assertThat(live.ringWithReturned("c:1")).isSameAs(live.ring());
  }

  @Test
  void accept_dropsAPeerAlreadyOffTheRing_membersListenerToldThoughTheRingStays() {
    FakeClock clock = new FakeClock();
    PeerLiveness liveness = new PeerLiveness(clock);
    Membership live =
        new Membership(
            HashRing.of(List.of(), 16, PeerHash.FNV1A),
            "a:1",
            clock,
            new FakeScheduler(clock),
            Duration.ofSeconds(30),
            liveness::down);
    List<Set<String>> told = new ArrayList<>();
    live.addMembersListener(() -> told.add(live.members()));
    live.accept(Set.of("a:1", "b:1", "c:1"));
    liveness.unreachable("c:1", "refused");
    live.refresh();
    long ringChanges = live.changes();

    live.accept(Set.of("a:1", "b:1"));

    assertThat(live.changes()).as("c:1 was already off the ring").isEqualTo(ringChanges);
    assertThat(told).containsExactly(Set.of("a:1", "b:1", "c:1"), Set.of("a:1", "b:1"));
  }

  @Test
  void departed_markRenewed_expiresFromLatestMark() {
    FakeClock clock = new FakeClock();
    FakeScheduler scheduler = new FakeScheduler(clock);
    Membership expiring =
        new Membership(
            HashRing.of(List.of(), 16, PeerHash.FNV1A), "a:1", clock, scheduler, Duration.ofSeconds(30));
    expiring.accept(Set.of("a:1", "b:1"));
    expiring.departed("b:1");
    scheduler.advance(Duration.ofSeconds(20));
    expiring.departed("b:1");

    scheduler.advance(Duration.ofSeconds(10));
    assertThat(expiring.ring().peers()).containsExactly("a:1");
    scheduler.advance(Duration.ofSeconds(20));
    assertThat(expiring.ring().peers()).containsExactly("a:1", "b:1");
  }

  @Test
  void departed_self_neverExpires() {
    FakeClock clock = new FakeClock();
    FakeScheduler scheduler = new FakeScheduler(clock);
    Membership expiring =
        new Membership(
            HashRing.of(List.of(), 16, PeerHash.FNV1A), "a:1", clock, scheduler, Duration.ofSeconds(30));
    expiring.accept(Set.of("a:1", "b:1"));
    expiring.departed("a:1");

    scheduler.advance(Duration.ofMinutes(10));
    expiring.expireDepartures();
    assertThat(expiring.ring().peers()).containsExactly("b:1");
  }

  @Test
  void accept_departedPeerNoLongerDiscovered_forgotten() {
    membership.accept(Set.of("a:1", "b:1"));
    membership.departed("b:1");
    membership.accept(Set.of("a:1"));
    membership.accept(Set.of("a:1", "b:1"));
    assertThat(membership.ring().peers()).containsExactly("a:1", "b:1");
  }

  @Test
  void staticDiscovery_emptyList_selfAlone() throws Exception {
    new StaticDiscovery("me:1051", List.of()).start(membership);
    assertThat(membership.ring().peers()).containsExactly("me:1051");
  }

  @Test
  void staticDiscovery_list_reportedOnStart() throws Exception {
    StaticDiscovery d = new StaticDiscovery("a:1", List.of("a:1", "b:1", "a:1"));
    assertThat(d.peers()).containsExactlyInAnyOrder("a:1", "b:1");
    d.start(membership);
    assertThat(membership.ring().peers()).containsExactly("a:1", "b:1");
  }

  @Test
  void listener_readsTheMembershipFromAnotherThread_notBlockedByTheChangeItHears()
      throws Exception {
    java.util.concurrent.ExecutorService other =
        java.util.concurrent.Executors.newSingleThreadExecutor();
    List<Set<String>> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
    membership.addListener(
        (before, after) -> {
          try {
            seen.add(other.submit(membership::members).get(5, java.util.concurrent.TimeUnit.SECONDS));
          } catch (Exception e) {
            throw new IllegalStateException("the other thread could not read the membership", e);
          }
        });

    membership.accept(Set.of("a:1", "b:1"));
    other.shutdownNow();

    assertThat(seen).containsExactly(Set.of("a:1", "b:1"));
  }

  @Test
  void changes_fromTwoThreads_deliveredInTheOrderTheyHappened() throws Exception {
    List<List<String>> order = new java.util.concurrent.CopyOnWriteArrayList<>();
    java.util.concurrent.CountDownLatch inFirst = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    membership.addListener(
        (before, after) -> {
          order.add(after.peers());
          if (after.peers().equals(List.of("a:1"))) {
            inFirst.countDown();
            try {
              release.await(5, java.util.concurrent.TimeUnit.SECONDS);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }
        });
    Thread first = new Thread(() -> membership.accept(Set.of("a:1")));
    first.start();
    assertThat(inFirst.await(5, java.util.concurrent.TimeUnit.SECONDS)).isTrue();

    membership.accept(Set.of("a:1", "b:1"));
    List<List<String>> beforeRelease = List.copyOf(order);
    release.countDown();
    first.join(5000);

    assertThat(beforeRelease).containsExactly(List.of("a:1"));
    assertThat(order).containsExactly(List.of("a:1"), List.of("a:1", "b:1"));
    assertThat(membership.ring().peers()).containsExactly("a:1", "b:1");
  }
}
