package dev.weir.core.cluster.handoff;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.RingKeys;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Which keys counted for an unreached owner are handed back to it, and which are forgotten. */
class FallbackCountsTest {

  private static final String OWNER = "10.0.0.2:81";
  private static final HashRing RING =
      HashRing.of(List.of("10.0.0.1:81", OWNER, "10.0.0.3:81"), 512, PeerHash.FNV1A);
  private static final HashRing WITHOUT_OWNER =
      HashRing.of(List.of("10.0.0.1:81", "10.0.0.3:81"), 512, PeerHash.FNV1A);

  private final FakeClock clock = new FakeClock();
  private final FallbackCounts counts = new FallbackCounts(clock);

  private static RateLimitRequest req(String key) {
    return RateLimitRequest.builder("n", key).hits(1).limit(5).duration(60_000).build();
  }

  private RateLimitResponse counted() {
    return RateLimitResponse.of(Status.UNDER_LIMIT, 5, 4, clock.wallMillis() + 60_000);
  }

  @Test
  void takeFor_keysCountedForTheOwner_returnedOnceThenForgotten() {
    List<String> keys = RingKeys.split(RING, "n", "k", OWNER, 2, 0);
    counts.counted(
        List.of(req(keys.get(0)), req(keys.get(1))), List.of(counted(), counted()), OWNER);

    assertThat(counts.takeFor("10.0.0.1:81", RING)).isEmpty();
    assertThat(counts.takeFor(OWNER, RING))
        .containsExactlyInAnyOrder("n_" + keys.get(0), "n_" + keys.get(1));
    assertThat(counts.takeFor(OWNER, RING)).isEmpty();
    assertThat(counts.isEmpty()).isTrue();
  }

  @Test
  void counted_itemAnsweredWithAnError_notRemembered() {
    String key = RingKeys.ownedBy(RING, "n", "k", OWNER);
    RateLimitResponse failed = new RateLimitResponse(Status.UNDER_LIMIT, 5, 0, 0, "bad", Map.of());

    counts.counted(List.of(req(key)), List.of(failed), OWNER);

    assertThat(counts.isEmpty()).isTrue();
  }

  @Test
  void counted_globalItemAnsweredFromTheCopy_notRemembered() {
    String key = RingKeys.ownedBy(RING, "n", "k", OWNER);
    RateLimitRequest global =
        RateLimitRequest.builder("n", key)
            .hits(1)
            .limit(5)
            .duration(60_000)
            .behavior(Behavior.GLOBAL)
            .build();

    counts.counted(List.of(global), List.of(counted()), OWNER);

    assertThat(counts.isEmpty()).isTrue();
  }

  @Test
  void takeFor_bucketFullAgain_keyForgotten() {
    String key = RingKeys.ownedBy(RING, "n", "k", OWNER);
    counts.counted(List.of(req(key)), List.of(counted()), OWNER);

    clock.advance(Duration.ofSeconds(61));

    assertThat(counts.takeFor(OWNER, RING)).isEmpty();
  }

  @Test
  void forgetMovedOn_ringNoLongerNamingTheOwner_keyLeftToTheRingChange() {
    String key = RingKeys.ownedBy(RING, "n", "k", OWNER);
    counts.counted(List.of(req(key)), List.of(counted()), OWNER);

    counts.forgetMovedOn(WITHOUT_OWNER);

    assertThat(counts.takeFor(OWNER, RING)).isEmpty();
  }

  @Test
  void takeFor_ringGivingTheKeyToAnotherNode_keySkippedAndForgotten() {
    String key = RingKeys.ownedBy(RING, "n", "k", OWNER);
    counts.counted(List.of(req(key)), List.of(counted()), OWNER);

    assertThat(counts.takeFor(OWNER, WITHOUT_OWNER)).isEmpty();
    assertThat(counts.takeFor(OWNER, RING)).isEmpty();
  }
}
