package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.testkit.FakeClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PeerLivenessTest {

  private final FakeClock clock = new FakeClock();
  private final PeerLiveness liveness = new PeerLiveness(clock);
  private final List<String> events = new ArrayList<>();

  {
    liveness.addListener(
        new PeerLiveness.Listener() {
          @Override
          public void peerDown(String peer, String reason) {
            events.add("down " + peer + " " + reason + " " + liveness.down());
          }

          @Override
          public void peerUp(String peer, Duration downFor) {
            events.add("up " + peer + " after " + downFor.toMillis() + " ms " + liveness.down());
          }

          @Override
          public void stillDown(String peer) {
            events.add("still down " + peer);
          }

          @Override
          public void peerLeft(String peer) {
            events.add("left " + peer + " " + liveness.downReason(peer));
          }

          @Override
          public void peerUnanswered(String peer) {
            events.add("unanswered " + peer + " " + liveness.unanswered());
          }
        });
  }

  @Test
  void notAnswering_timeoutsOverAWorkingConnection_downOnlyAtTheThirdInARow() {
    liveness.notAnswering("b:1", "timeout 1", false);
    liveness.notAnswering("b:1", "timeout 2", false);
    boolean downAfterTwo = liveness.isDown("b:1");

    liveness.notAnswering("b:1", "timeout 3", false);

    assertThat(downAfterTwo).isFalse();
    assertThat(liveness.isDown("b:1")).isTrue();
    assertThat(events)
        .containsExactly(
            "unanswered b:1 [b:1]", "unanswered b:1 [b:1]", "down b:1 timeout 3 [b:1]");
  }

  @Test
  void notAnswering_successInBetween_countStartsOver() {
    liveness.notAnswering("b:1", "timeout", false);
    liveness.notAnswering("b:1", "timeout", false);
    liveness.answered("b:1");
    liveness.notAnswering("b:1", "timeout", false);
    liveness.notAnswering("b:1", "timeout", false);

    assertThat(liveness.isDown("b:1")).isFalse();
    assertThat(events).hasSize(4).allMatch(e -> e.startsWith("unanswered "));
  }

  @Test
  void notAnswering_soonAfterComingBack_downAtTheFirst() {
    liveness.unreachable("b:1", "refused");
    liveness.back("b:1");
    clock.advance(PeerLiveness.PROBATION.minusMillis(1));

    liveness.notAnswering("b:1", "timeout", false);

    assertThat(liveness.isDown("b:1")).isTrue();
  }

  @Test
  void notAnswering_probationOver_downOnlyAtTheThird() {
    liveness.unreachable("b:1", "refused");
    liveness.back("b:1");
    clock.advance(PeerLiveness.PROBATION);

    liveness.notAnswering("b:1", "timeout", false);
    liveness.notAnswering("b:1", "timeout", false);

    assertThat(liveness.isDown("b:1")).isFalse();
  }

  @Test
  void notAnswering_conclusive_downAtOnce() {
    liveness.notAnswering("b:1", "UNAVAILABLE: Connection refused", true);

    assertThat(liveness.down()).containsExactly("b:1");
    assertThat(liveness.downReason("b:1")).isEqualTo("UNAVAILABLE: Connection refused");
  }

  @Test
  void answered_downPeer_staysDownUntilAProbeOrItsReturnNotice() {
    liveness.unreachable("b:1", "cannot connect");

    liveness.answered("b:1");

    assertThat(liveness.isDown("b:1")).isTrue();
    assertThat(events).containsExactly("down b:1 cannot connect [b:1]");
  }

  @Test
  void probeAnswered_downPeer_upWithItsOutageAndErrorCleared() {
    liveness.unreachable("b:1", "cannot connect");
    clock.advance(Duration.ofMillis(1500));

    liveness.probeAnswered("b:1");

    assertThat(liveness.isDown("b:1")).isFalse();
    assertThat(liveness.troubled()).isEmpty();
    assertThat(events).containsExactly("down b:1 cannot connect [b:1]", "up b:1 after 1500 ms []");
  }

  @Test
  void unreachable_seenBeforeThePeerCameBack_ignoredAndSaysSo() {
    liveness.unreachable("b:1", "cannot connect");
    long seen = clock.monotonicNanos();
    clock.advance(Duration.ofMillis(1));
    liveness.back("b:1");
    events.clear();

    boolean taken = liveness.unreachable("b:1", "cannot connect again", seen);

    assertThat(taken).isFalse();
    assertThat(liveness.isDown("b:1")).isFalse();
    assertThat(events).isEmpty();
  }

  @Test
  void unreachable_seenAtTheSameReadingAsTheReturn_down() {
    liveness.unreachable("b:1", "cannot connect");
    liveness.back("b:1");

    boolean taken = liveness.unreachable("b:1", "cannot connect again", clock.monotonicNanos());

    assertThat(taken).isTrue();
    assertThat(liveness.downReason("b:1"))
        .as("a sight not before the return (a frozen fake clock reads the same)")
        .isEqualTo("cannot connect again");
  }

  @Test
  void notAnswering_upPeer_unansweredUntilItAnswers() {
    liveness.notAnswering("b:1", "timeout", false);
    Set<String> afterTimeout = liveness.unanswered();

    liveness.answered("b:1");

    assertThat(afterTimeout).containsExactly("b:1");
    assertThat(liveness.unanswered()).isEmpty();
    assertThat(events).containsExactly("unanswered b:1 [b:1]");
  }

  @Test
  void notAnswering_thirdInARow_downAndNoLongerUnanswered() {
    for (int i = 0; i < PeerLiveness.FAILURES_TO_DOWN; i++) {
      liveness.notAnswering("b:1", "timeout", false);
    }

    assertThat(liveness.unanswered()).isEmpty();
    assertThat(liveness.down()).containsExactly("b:1");
  }

  @Test
  void probeAnswered_upPeerWithUnansweredCalls_errorClearedWithoutAnUpEvent() {
    liveness.notAnswering("b:1", "timeout", false);
    liveness.notAnswering("b:1", "timeout", false);

    liveness.probeAnswered("b:1");
    liveness.notAnswering("b:1", "timeout", false);
    liveness.notAnswering("b:1", "timeout", false);

    assertThat(liveness.isDown("b:1")).as("the count started over").isFalse();
    assertThat(events)
        .containsExactly(
            "unanswered b:1 [b:1]",
            "unanswered b:1 [b:1]",
            "unanswered b:1 [b:1]",
            "unanswered b:1 [b:1]");
  }

  @Test
  void answeredWithError_upPeer_notUnanswered() {
    liveness.notAnswering("b:1", "timeout", false);

    liveness.answeredWithError("b:1", "INTERNAL: boom");

    assertThat(liveness.unanswered()).isEmpty();
    assertThat(liveness.troubled()).hasSize(1);
  }

  @Test
  void answeredWithError_upPeer_staysUpAndReportsTheErrorUntilNextSuccess() {
    liveness.answeredWithError("b:1", "INTERNAL: boom");
    List<PeerLiveness.PeerState> withError = liveness.troubled();

    liveness.answered("b:1");

    assertThat(withError)
        .containsExactly(new PeerLiveness.PeerState("b:1", true, "INTERNAL: boom", Duration.ZERO));
    assertThat(liveness.troubled()).isEmpty();
    assertThat(events).isEmpty();
  }

  @Test
  void answeredWithError_betweenTimeouts_countStartsOver() {
    liveness.notAnswering("b:1", "timeout", false);
    liveness.notAnswering("b:1", "timeout", false);
    liveness.answeredWithError("b:1", "INTERNAL: boom");
    liveness.notAnswering("b:1", "timeout", false);

    assertThat(liveness.isDown("b:1")).isFalse();
  }

  @Test
  void troubled_downPeer_reportsHowLongAndWhy() {
    liveness.left("b:1");
    clock.advance(Duration.ofSeconds(4));

    assertThat(liveness.troubled())
        .containsExactly(
            new PeerLiveness.PeerState("b:1", false, PeerLiveness.LEFT, Duration.ofSeconds(4)));
  }

  @Test
  void unreachable_alreadyDown_notToldTwiceAndReasonKept() {
    liveness.unreachable("b:1", "first");
    liveness.unreachable("b:1", "second");
    liveness.notAnswering("b:1", "third", true);

    assertThat(events).containsExactly("down b:1 first [b:1]", "still down b:1");
    assertThat(liveness.downReason("b:1")).isEqualTo("first");
  }

  @Test
  void left_alreadyDownForAnotherReason_reasonBecomesLeftAndListenersToldOnce() {
    liveness.unreachable("b:1", "cut");

    liveness.left("b:1");
    liveness.left("b:1");

    assertThat(events)
        .containsExactly("down b:1 cut [b:1]", "left b:1 " + PeerLiveness.LEFT);
    assertThat(liveness.downReason("b:1")).isEqualTo(PeerLiveness.LEFT);
  }

  @Test
  void retain_forgetsPeersDiscoveryDropped() {
    liveness.unreachable("b:1", "gone");
    liveness.unreachable("c:1", "gone");

    liveness.retain(Set.of("a:1", "c:1"));

    assertThat(liveness.down()).containsExactly("c:1");
  }

  @Test
  void relayTargetLeft_targetAnsweringHereAgain_keptUp() {
    liveness.notAnswering("c", "cut", true);
    liveness.probeAnswered("c");
    events.clear();

    liveness.relayTargetLeft("b", "c", clock.monotonicNanos());

    assertThat(liveness.isDown("c"))
        .as("a refusal made before c's return does not take it down")
        .isFalse();
    assertThat(events).isEmpty();
  }

  @Test
  void relayTargetLeft_relaySentBeforeTheTargetCameBackAndWentDownAgain_ignored() {
    liveness.notAnswering("c", "cut", true);
    long sent = clock.monotonicNanos();
    clock.advance(Duration.ofMillis(1));
    liveness.probeAnswered("c");
    liveness.notAnswering("c", "cut again", true);
    events.clear();

    liveness.relayTargetLeft("b", "c", sent);

    assertThat(liveness.downReason("c")).isEqualTo("cut again");
    assertThat(events).isEmpty();
  }

  @Test
  void relayTargetLeft_relaySentBeforeAnotherPeerLastVouchedForTheTarget_ignored() {
    liveness.notAnswering("c", "cut", true);
    long sent = clock.monotonicNanos();
    clock.advance(Duration.ofMillis(1));
    liveness.vouched("c");
    events.clear();

    liveness.relayTargetLeft("b", "c", sent);

    assertThat(liveness.downReason("c")).isEqualTo("cut");
    assertThat(events).isEmpty();
  }

  @Test
  void relayTargetLeft_relaySentAfterTheTargetWasLastVouchedFor_takenAsLeft() {
    liveness.notAnswering("c", "cut", true);
    liveness.vouched("c");
    clock.advance(Duration.ofMillis(1));
    events.clear();

    liveness.relayTargetLeft("b", "c", clock.monotonicNanos());

    assertThat(liveness.downReason("c")).isEqualTo(PeerLiveness.LEFT);
    assertThat(events).containsExactly("left c " + PeerLiveness.LEFT);
  }

  @Test
  void relayTargetLeft_relaySentAtTheSameReadingAsTheLastVouch_takenAsLeft() {
    liveness.notAnswering("c", "cut", true);
    liveness.vouched("c");
    events.clear();

    liveness.relayTargetLeft("b", "c", clock.monotonicNanos());

    assertThat(liveness.downReason("c"))
        .as("a relay not sent before the vouch (a frozen fake clock reads the same)")
        .isEqualTo(PeerLiveness.LEFT);
  }

  @Test
  void relayTargetLeft_targetDownHere_takenAsLeft() {
    liveness.notAnswering("c", "cut", true);
    events.clear();

    liveness.relayTargetLeft("b", "c", clock.monotonicNanos());

    assertThat(liveness.downReason("c")).isEqualTo(PeerLiveness.LEFT);
    assertThat(events).containsExactly("left c " + PeerLiveness.LEFT);
  }
}
