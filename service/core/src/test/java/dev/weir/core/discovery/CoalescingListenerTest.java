package dev.weir.core.discovery;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

class CoalescingListenerTest {
  private static final Duration WINDOW = Duration.ofMillis(250);

  private final ManualScheduler scheduler = new ManualScheduler();
  private final RecordingListener ring = new RecordingListener();
  private final CoalescingListener listener = new CoalescingListener(ring, scheduler, WINDOW);

  @Test
  void accept_firstSet_deliveredAtOnce() {
    listener.accept(Set.of("a"));

    assertThat(ring.received()).containsExactly(Set.of("a"));
    assertThat(scheduler.pending()).isZero();
  }

  @Test
  void accept_burstWithinWindow_onlyLatestDeliveredAtWindowEnd() {
    listener.accept(Set.of("a"));
    listener.accept(Set.of("a", "b"));
    listener.accept(Set.of("a", "b", "c"));
    scheduler.advance(WINDOW.minusMillis(1));

    assertThat(ring.received()).containsExactly(Set.of("a"));

    scheduler.advance(Duration.ofMillis(1));

    assertThat(ring.received()).containsExactly(Set.of("a"), Set.of("a", "b", "c"));
  }

  @Test
  void accept_flapBackWithinWindow_nothingDelivered() {
    listener.accept(Set.of("a", "b"));
    listener.accept(Set.of("a"));
    listener.accept(Set.of("a", "b"));
    scheduler.advance(WINDOW);

    assertThat(ring.received()).containsExactly(Set.of("a", "b"));
  }

  @Test
  void accept_identicalSet_notRedelivered() {
    listener.accept(Set.of("a"));
    listener.accept(Set.of("a"));
    scheduler.advance(WINDOW);

    assertThat(ring.received()).hasSize(1);
  }

  @Test
  void accept_sameSetWithAMemberOnAnotherPeerListener_deliveredAgainAtWindowEnd() {
    Map<String, String> listeners = new HashMap<>(Map.of("b", "b:2"));
    CoalescingListener withAddresses =
        new CoalescingListener(
            ring, scheduler, WINDOW, member -> Optional.ofNullable(listeners.get(member)));
    withAddresses.accept(Set.of("a", "b"));
    withAddresses.accept(Set.of("a", "b"));
    scheduler.advance(WINDOW);
    assertThat(ring.received()).as("nothing moved: not delivered again").hasSize(1);

    listeners.put("b", "b:3");
    withAddresses.accept(Set.of("a", "b"));
    scheduler.advance(WINDOW);

    assertThat(ring.received()).containsExactly(Set.of("a", "b"), Set.of("a", "b"));
  }

  @Test
  void accept_continuousChurn_deliveredOncePerWindow() {
    listener.accept(Set.of("a"));
    for (int i = 0; i < 10; i++) {
      listener.accept(Set.of("a", "n" + i));
      scheduler.advance(WINDOW.dividedBy(5));
    }

    assertThat(ring.received()).containsExactly(Set.of("a"), Set.of("a", "n4"), Set.of("a", "n9"));
  }

  @Test
  void close_pendingSet_dropped() {
    listener.accept(Set.of("a"));
    listener.accept(Set.of("a", "b"));
    listener.close();
    scheduler.advance(WINDOW);
    listener.accept(Set.of("c"));

    assertThat(ring.received()).containsExactly(Set.of("a"));
  }
}
