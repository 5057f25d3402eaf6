package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.IdlePeerHandler;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link IndirectProbes} against in-process peers whose answer to an indirect probe the test sets,
 * on a fake clock: who vouches, when a vouched peer leaves the ring (only after {@link
 * IndirectProbes#ROUNDS_TO_DROP} rounds without a voucher) and when it comes back.
 */
class IndirectProbesTest {

  private static final String A = "10.0.0.1:1051";
  private static final String B = "10.0.0.2:1051";
  private static final String C = "10.0.0.3:1051";
  private static final String D = "10.0.0.4:1051";
  private static final Duration INTERVAL = Duration.ofMillis(500);

  private final FakeClock clock = new FakeClock();
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final PeerLiveness liveness = new PeerLiveness(clock);
  private final Map<String, Boolean> reaches = new ConcurrentHashMap<>();
  private final AtomicInteger probesSent = new AtomicInteger();
  private final AtomicInteger changes = new AtomicInteger();
  private final List<Server> servers = new ArrayList<>();
  private final PeerClientPool pool = new PeerClientPool(this::client, liveness, peer -> false);
  private Set<String> members = Set.of(A, B, C);
  private volatile String unbuildable = "";
  private volatile boolean holdItemRelays;
  private volatile boolean holdProbes;
  private final List<CompletableFuture<GetPeerRateLimitsResp>> heldProbes =
      new java.util.concurrent.CopyOnWriteArrayList<>();
  private final List<CompletableFuture<GetPeerRateLimitsResp>> heldRelays =
      new java.util.concurrent.CopyOnWriteArrayList<>();
  private final IndirectProbes probes =
      new IndirectProbes(
          A,
          liveness,
          pool,
          () -> members,
          scheduler,
          INTERVAL,
          Duration.ofSeconds(1),
          changes::incrementAndGet);

  IndirectProbesTest() {
    liveness.addListener(probes);
  }

  @AfterEach
  void stop() {
    pool.close();
    servers.forEach(Server::shutdownNow);
  }

  private PeerClient client(String address) {
    if (address.equals(unbuildable)) {
      throw new IllegalStateException("no channel to " + address);
    }
    try {
      String name = InProcessServerBuilder.generateName();
      servers.add(
          InProcessServerBuilder.forName(name)
              .directExecutor()
              .addService(new PeersService(new Relaying(address), clock))
              .build()
              .start());
      return new PeerClient(
          address,
          InProcessChannelBuilder.forName(name).directExecutor().build(),
          new PeerClientSettings(1000, Duration.ofMillis(1), Duration.ofSeconds(1), true),
          scheduler,
          clock);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void peerDownHere_anotherReachesIt_vouchedAndRelayedThroughIt() {
    reaches.put(B + ">" + C, true);

    liveness.notAnswering(C, "cut", true);

    assertThat(probes.voucher(C)).isEqualTo(B);
    assertThat(probes.via(C)).isEqualTo(B);
    assertThat(probes.unreached()).isEmpty();
    assertThat(changes).hasValue(0);
  }

  @Test
  void peerDownHere_nobodyReachesIt_unreached() {
    liveness.notAnswering(C, "dead", true);

    assertThat(probes.unreached()).containsExactly(C);
    assertThat(probes.via(C)).isNull();
    assertThat(changes).hasValue(1);
  }

  @Test
  void vouchedPeer_leavesOnlyAfterTwoRoundsWithoutVoucher_andReturnsWhenReachedAgain() {
    reaches.put(B + ">" + C, true);
    liveness.notAnswering(C, "cut", true);

    reaches.put(B + ">" + C, false);
    scheduler.advance(INTERVAL);
    assertThat(probes.unreached()).as("one failed round").isEmpty();
    reaches.put(B + ">" + C, true);
    scheduler.advance(INTERVAL);
    reaches.put(B + ">" + C, false);
    scheduler.advance(INTERVAL);
    assertThat(probes.unreached()).as("failed rounds are counted in a row").isEmpty();
    scheduler.advance(INTERVAL);
    assertThat(probes.unreached()).as("two failed rounds in a row").containsExactly(C);
    assertThat(changes).hasValue(1);

    reaches.put(B + ">" + C, true);
    scheduler.advance(INTERVAL);
    assertThat(probes.unreached()).isEmpty();
    assertThat(probes.voucher(C)).isEqualTo(B);
    assertThat(changes).hasValue(2);
  }

  @Test
  void voucherRefusesARelay_aRoundStartsAtOnce_andNamesAnotherPeerThatReachesIt() {
    String d = "10.0.0.4:1051";
    members = Set.of(A, B, C, d);
    reaches.put(B + ">" + C, true);
    liveness.notAnswering(C, "cut", true);
    assertThat(probes.voucher(C)).isEqualTo(B);
    reaches.put(B + ">" + C, false);
    reaches.put(d + ">" + C, true);

    assertThat(probes.settled(C, B)).as("the round's verdict").isDone();

    assertThat(probes.voucher(C)).isEqualTo(d);
    assertThat(probes.via(C)).isEqualTo(d);
    assertThat(probes.unreached()).isEmpty();
  }

  @Test
  void voucherRefusesRelays_roundsStartedSoFindingNoVoucherDoNotDropThePeerSooner() {
    reaches.put(B + ">" + C, true);
    liveness.notAnswering(C, "cut", true);
    reaches.put(B + ">" + C, false);

    probes.settled(C, B);
    probes.settled(C, B);
    probes.settled(C, B);

    assertThat(probes.unreached()).as("after rounds started by refusals").isEmpty();
    assertThat(probes.voucher(C)).isEqualTo(B);
    scheduler.advance(INTERVAL);
    scheduler.advance(INTERVAL);
    assertThat(probes.unreached()).as("two timed rounds without a voucher").containsExactly(C);
  }

  @Test
  void voucherKeepsRefusing_roundsItStartsInFlightAtEachTick_peerStillDroppedAfterTwoTimedRounds() {
    reaches.put(B + ">" + C, true);
    liveness.notAnswering(C, "cut", true);
    reaches.put(B + ">" + C, false);
    holdProbes = true;

    for (int i = 0; i < 2; i++) {
      probes.settled(C, B);
      scheduler.advance(INTERVAL);
      heldProbes.forEach(
          p -> p.completeExceptionally(new PeerException(C, "does not reach " + C, null)));
      heldProbes.clear();
    }

    assertThat(probes.unreached())
        .as("two ticks, each finding a refusal's round without a voucher in flight")
        .containsExactly(C);
  }

  @Test
  void newVoucherRefusesBeforeTheNextTick_anotherRoundNamesTheNextPeerThatReachesIt() {
    String d = "10.0.0.4:1051";
    String e = "10.0.0.5:1051";
    members = Set.of(A, B, C, d, e);
    reaches.put(B + ">" + C, true);
    liveness.notAnswering(C, "cut", true);
    reaches.put(B + ">" + C, false);
    reaches.put(d + ">" + C, true);
    probes.settled(C, B);
    assertThat(probes.voucher(C)).as("after B refused").isEqualTo(d);
    reaches.put(d + ">" + C, false);
    reaches.put(e + ">" + C, true);

    assertThat(probes.settled(C, d)).isDone();

    assertThat(probes.voucher(C)).as("after D refused, before the next tick").isEqualTo(e);
  }

  @Test
  void refusalRoundInFlightWhenThePeerCameBackAndWentDownAgain_notCountedByThatDown() {
    reaches.put(B + ">" + C, true);
    liveness.notAnswering(C, "cut", true);
    reaches.put(B + ">" + C, false);
    holdProbes = true;
    probes.settled(C, B);
    liveness.probeAnswered(C);
    liveness.notAnswering(C, "cut again", true);

    heldProbes.forEach(
        p -> p.completeExceptionally(new PeerException(C, "does not reach " + C, null)));

    assertThat(probes.unreached())
        .as("a refusal's round that went on across C's return is not the timed round")
        .isEmpty();
  }

  @Test
  void voucherRefusesRelays_atMostOneRoundBetweenTwoTicks() {
    reaches.put(B + ">" + C, true);
    liveness.notAnswering(C, "cut", true);
    reaches.put(B + ">" + C, false);
    int before = probesSent.get();

    probes.settled(C, B);
    probes.settled(C, B);
    probes.settled(C, B);
    int betweenTicks = probesSent.get() - before;
    scheduler.advance(INTERVAL);
    probes.settled(C, B);

    assertThat(betweenTicks).as("probes sent for three refusals between two ticks").isEqualTo(1);
    assertThat(probesSent.get() - before)
        .as("after the tick's round, a refusal may start one more")
        .isEqualTo(3);
  }

  @Test
  void targetLeftRefusalOfARelaySentBeforeTheLastVerdictVouchingForTheTarget_ignored() {
    reaches.put(B + ">" + C, true);
    liveness.notAnswering(C, "cut", true);
    holdItemRelays = true;
    CompletableFuture<List<RateLimitResponse>> relayed =
        pool.get(B).relay(C, List.of(item()), Duration.ofSeconds(1));
    clock.advance(Duration.ofMillis(1));
    scheduler.advance(INTERVAL);
    assertThat(probes.voucher(C)).as("the verdict after the relay was sent").isEqualTo(B);

    heldRelays
        .remove(0)
        .completeExceptionally(new UnsentRelay("'" + C + "' announced it is leaving", true));

    assertThat(relayed).isCompletedExceptionally();
    assertThat(liveness.downReason(C)).as("C's reason at A").isEqualTo("cut");
    assertThat(probes.unreached()).as("unreached at A").isEmpty();
    assertThat(probes.voucher(C)).isEqualTo(B);
  }

  @Test
  void targetLeftRefusalOfARelaySentAfterTheLastVerdictVouchingForTheTarget_targetTakenAsLeft() {
    reaches.put(B + ">" + C, true);
    liveness.notAnswering(C, "cut", true);
    holdItemRelays = true;
    clock.advance(Duration.ofMillis(1));
    CompletableFuture<List<RateLimitResponse>> relayed =
        pool.get(B).relay(C, List.of(item()), Duration.ofSeconds(1));

    heldRelays
        .remove(0)
        .completeExceptionally(new UnsentRelay("'" + C + "' announced it is leaving", true));

    assertThat(relayed).isCompletedExceptionally();
    assertThat(liveness.downReason(C)).isEqualTo(PeerLiveness.LEFT);
    assertThat(probes.unreached()).containsExactly(C);
  }

  private static RateLimitRequest item() {
    return RateLimitRequest.builder("n", "k").hits(1).limit(10).duration(600_000).build();
  }

  @Test
  void peerAnswersAgain_forgotten_callsGoDirect() {
    reaches.put(B + ">" + C, true);
    liveness.notAnswering(C, "cut", true);

    liveness.back(C);

    assertThat(probes.via(C)).isNull();
    assertThat(probes.voucher(C)).isNull();
  }

  @Test
  void noOtherMember_unreachedAtOnceWithoutAProbe() {
    members = Set.of(A, C);

    liveness.notAnswering(C, "cut", true);

    assertThat(probes.unreached()).containsExactly(C);
    assertThat(probesSent).hasValue(0);
  }

  @Test
  void peerAnnouncedItsLeave_unreachedAtOnceWithoutAProbe() {
    reaches.put(B + ">" + C, true);

    liveness.left(C);

    assertThat(probes.unreached()).containsExactly(C);
    assertThat(probesSent).hasValue(0);
  }

  @Test
  void leaverAMemberAgainWhenItsDepartureMarkExpired_anotherReachesIt_vouchedAtTheNextRound() {
    reaches.put(B + ">" + C, true);
    members = Set.of(A, B);
    liveness.left(C);
    scheduler.advance(INTERVAL);
    assertThat(probesSent).as("probes of a peer that is not a member").hasValue(0);

    members = Set.of(A, B, C);
    scheduler.advance(INTERVAL);

    assertThat(probes.voucher(C)).isEqualTo(B);
    assertThat(probes.unreached()).isEmpty();
    assertThat(changes).as("unreached at its leave, reached again").hasValue(2);
  }

  @Test
  void vouchedPeerAnnouncesItsLeave_unreachedAtOnceAndItsVoucherDropped() {
    reaches.put(B + ">" + C, true);
    liveness.notAnswering(C, "cut", true);

    liveness.left(C);

    assertThat(probes.unreached()).containsExactly(C);
    assertThat(probes.voucher(C)).isNull();
    assertThat(probes.via(C)).isNull();
    assertThat(changes).hasValue(1);
  }

  @Test
  void leaverVouchedForAgainWhileStillDownAsLeft_targetLeftRefusal_unreachedAndVoucherDropped() {
    reaches.put(B + ">" + C, true);
    members = Set.of(A, B);
    liveness.left(C);
    members = Set.of(A, B, C);
    scheduler.advance(INTERVAL);
    assertThat(probes.voucher(C)).as("voucher of the leaver back across a cut").isEqualTo(B);
    clock.advance(Duration.ofMillis(1));

    liveness.relayTargetLeft(B, C, clock.monotonicNanos());

    assertThat(probes.unreached()).as("unreached at A after its second leave").containsExactly(C);
    assertThat(probes.voucher(C)).as("voucher after its second leave").isNull();
    assertThat(liveness.downReason(C)).isEqualTo(PeerLiveness.LEFT);
  }

  @Test
  void voucherDiscoveryDropped_notNamedAnyMore_anotherPeerThatReachesItIs() {
    members = Set.of(A, B, C, D);
    reaches.put(B + ">" + C, true);
    reaches.put(D + ">" + C, true);
    liveness.notAnswering(C, "cut", true);
    assertThat(probes.voucher(C)).isEqualTo(B);

    members = Set.of(A, C, D);
    assertThat(probes.via(C)).as("via once discovery dropped the voucher").isEqualTo(D);
    liveness.retain(members);
    probes.retain(members);

    assertThat(probes.voucher(C)).as("voucher after retain").isNull();
    assertThat(probes.via(C)).as("via after retain").isEqualTo(D);
  }

  @Test
  void checkerCannotBeCalled_roundStillReachesItsVerdict() {
    unbuildable = B;

    liveness.notAnswering(C, "cut", true);

    assertThat(probes.settled(C)).as("the round ended").isDone();
    assertThat(probes.unreached()).containsExactly(C);
    assertThat(changes).hasValue(1);
  }

  @Test
  void membersCannotBeRead_noRoundLeftInFlight_theNextOneReachesItsVerdict() {
    members = null;
    assertThatThrownBy(() -> liveness.notAnswering(C, "cut", true))
        .isInstanceOf(NullPointerException.class);
    members = Set.of(A, B, C);

    scheduler.advance(INTERVAL);

    assertThat(probes.settled(C)).isDone();
    assertThat(probes.unreached()).containsExactly(C);
  }

  @Test
  void refusalRoundCouldNotStartForWantOfMembers_laterTimedRoundsStillCount() {
    reaches.put(B + ">" + C, true);
    liveness.notAnswering(C, "cut", true);
    reaches.put(B + ">" + C, false);
    members = null;
    assertThatThrownBy(() -> probes.settled(C, B)).isInstanceOf(NullPointerException.class);
    members = Set.of(A, B, C);

    scheduler.advance(INTERVAL);
    scheduler.advance(INTERVAL);

    assertThat(probes.unreached()).as("two timed rounds without a voucher").containsExactly(C);
  }

  @Test
  void relayFailsBeforeTheFirstRoundStarted_settledRunsTheRoundAndWaitsForItsVerdict() {
    PeerLiveness early = new PeerLiveness(clock);
    List<Integer> rebuilt = new ArrayList<>();
    IndirectProbes told =
        new IndirectProbes(
            A, early, pool, () -> members, scheduler, INTERVAL, Duration.ofSeconds(1),
            () -> rebuilt.add(1));
    // The liveness has marked C down and not yet told the probes (they are told after its lock).
    early.notAnswering(C, "cut", true);

    CompletableFuture<Void> settled = told.settled(C);

    assertThat(settled).as("the verdict was reached").isDone();
    assertThat(told.unreached()).containsExactly(C);
    assertThat(rebuilt).as("the ring was rebuilt").hasSize(1);
    assertThat(probesSent).hasValue(1);
    told.close();
  }

  /** A peer that answers an indirect probe of a target as {@link #reaches} says. */
  private final class Relaying extends IdlePeerHandler {
    private final String self;

    Relaying(String self) {
      this.self = self;
    }

    @Override
    public CompletableFuture<GetPeerRateLimitsResp> relay(
        GetPeerRateLimitsReq request, Duration within) {
      if (request.getRequestsCount() > 0 && holdItemRelays) {
        CompletableFuture<GetPeerRateLimitsResp> held = new CompletableFuture<>();
        heldRelays.add(held);
        return held;
      }
      probesSent.incrementAndGet();
      String target = request.getWeirRelayTo();
      if (request.getRequestsCount() == 0 && holdProbes) {
        CompletableFuture<GetPeerRateLimitsResp> held = new CompletableFuture<>();
        heldProbes.add(held);
        return held;
      }
      return reaches.getOrDefault(self + ">" + target, false)
          ? CompletableFuture.completedFuture(GetPeerRateLimitsResp.getDefaultInstance())
          : CompletableFuture.failedFuture(
              new PeerException(target, "does not reach " + target, null));
    }
  }
}
