package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class PeerRoundsTest {

  private static final Duration INTERVAL = Duration.ofMillis(500);

  private final FakeClock clock = new FakeClock();
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final List<String> rounds = new CopyOnWriteArrayList<>();
  private volatile Set<String> troubled = Set.of("a:1", "b:1");

  @Test
  void troubledPeers_oneRoundEachPerInterval_untilNoneIsTroubled() {
    PeerRounds timer =
        new PeerRounds(() -> troubled, () -> Set.of("a:1", "b:1"), scheduler, INTERVAL, rounds::add);

    timer.start();
    timer.start();
    scheduler.advance(INTERVAL);
    troubled = Set.of("b:1");
    scheduler.advance(INTERVAL);
    troubled = Set.of();
    scheduler.advance(INTERVAL);
    scheduler.advance(INTERVAL);

    assertThat(rounds).containsExactlyInAnyOrder("a:1", "b:1", "b:1");
    assertThat(scheduler.pending()).as("stopped by itself").isZero();
  }

  @Test
  void aRoundThrows_theOtherPeersRoundsRunAndTheTimerGoesOn() {
    AtomicBoolean thrown = new AtomicBoolean();
    PeerRounds timer =
        new PeerRounds(
            () -> new LinkedHashSet<>(List.of("a:1", "b:1")),
            () -> Set.of("a:1", "b:1"),
            scheduler,
            INTERVAL,
            peer -> {
              rounds.add(peer);
              if (peer.equals("a:1") && !thrown.getAndSet(true)) {
                throw new IllegalStateException("probe could not start");
              }
            });

    timer.start();
    scheduler.advance(INTERVAL);
    scheduler.advance(INTERVAL);

    assertThat(rounds).containsExactly("a:1", "b:1", "a:1", "b:1");
  }
}
