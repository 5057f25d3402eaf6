package dev.weir.core.cluster.handoff;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerException;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.RingKeys;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Which keys counted for an unreached owner are handed back to it, and which are forgotten. */
class FallbackCountsTest {

  private static final String SELF = "10.0.0.1:81";
  private static final String OWNER = "10.0.0.2:81";
  private static final String THIRD = "10.0.0.3:81";
  private static final HashRing RING =
      HashRing.of(List.of(SELF, OWNER, THIRD), 512, PeerHash.FNV1A);
  private static final HashRing WITHOUT_OWNER =
      HashRing.of(List.of(SELF, THIRD), 512, PeerHash.FNV1A);
  /** How a hand-on fails when the owner's connection cannot be made. */
  private static final Throwable UNREACHED = io.grpc.Status.UNAVAILABLE.asRuntimeException();

  private final FakeClock clock = new FakeClock();
  private final InMemoryBucketStore store = new InMemoryBucketStore(clock);
  private final FallbackCounts counts = new FallbackCounts(clock, store);

  private static RateLimitRequest req(String key) {
    return RateLimitRequest.builder("n", key).hits(1).limit(5).duration(60_000).build();
  }

  private RateLimitResponse counted() {
    return RateLimitResponse.of(Status.UNDER_LIMIT, 5, 4, clock.wallMillis() + 60_000);
  }

  // Counts one hit of key here, in a bucket that expires expiresIn from now.
  private RateLimitRequest countedHere(String key, Duration expiresIn) {
    long now = clock.wallMillis();
    store.put(
        "n_" + key,
        new TokenBucketState(Status.UNDER_LIMIT, 5, 60_000, 4, now, now + expiresIn.toMillis()));
    return req(key);
  }

  private RateLimitRequest countedHere(String key) {
    return countedHere(key, Duration.ofMinutes(1));
  }

  @Test
  void takeFor_keysCountedForTheOwner_returnedOnceThenForgotten() {
    List<String> keys = RingKeys.split(RING, "n", "k", OWNER, 2, 0);
    counts.counted(
        List.of(countedHere(keys.get(0)), countedHere(keys.get(1))),
        List.of(counted(), counted()),
        OWNER,
        UNREACHED);

    assertThat(counts.takeFor(SELF, RING).keys()).isEmpty();
    assertThat(counts.takeFor(OWNER, RING).keys())
        .containsExactlyInAnyOrder("n_" + keys.get(0), "n_" + keys.get(1));
    assertThat(counts.takeFor(OWNER, RING).keys()).isEmpty();
    assertThat(counts.isEmpty()).isTrue();
  }

  @Test
  void counted_memoryFull_newKeyRememberedOnlyOnceAScanFindsAnExpiredOne_atMostOnceASecond() {
    List<RateLimitRequest> full = new ArrayList<>();
    List<RateLimitResponse> answers = new ArrayList<>();
    full.add(countedHere("soon", Duration.ofMillis(500)));
    answers.add(counted());
    for (int i = 1; i < FallbackCounts.LIMIT; i++) {
      full.add(countedHere("full" + i));
      answers.add(counted());
    }
    counts.counted(full, answers, OWNER, UNREACHED);
    String late = RingKeys.ownedBy(RING, "n", "late", OWNER);
    String later = RingKeys.ownedBy(RING, "n", "later", OWNER);

    counts.counted(List.of(countedHere(late)), List.of(counted()), OWNER, UNREACHED);
    clock.advance(Duration.ofMillis(600));
    counts.counted(List.of(countedHere(late)), List.of(counted()), OWNER, UNREACHED);
    clock.advance(Duration.ofMillis(400));
    counts.counted(List.of(countedHere(later)), List.of(counted()), OWNER, UNREACHED);

    assertThat(counts.takeFor(OWNER, RING).keys())
        .as("full of live keys at first; 'soon' expired at 500 ms, found by the scan at 1 s")
        .doesNotContain("n_" + late, "n_soon")
        .contains("n_" + later);
  }

  @Test
  void counted_handOnTimedOut_notRememberedAsTheOwnerMayHaveCountedIt() {
    String key = RingKeys.ownedBy(RING, "n", "k", OWNER);

    counts.counted(
        List.of(countedHere(key)),
        List.of(counted()),
        OWNER,
        io.grpc.Status.DEADLINE_EXCEEDED.asRuntimeException());

    assertThat(counts.isEmpty()).isTrue();
  }

  @Test
  void counted_handOnRefusedBeforeItWasSent_remembered() {
    String key = RingKeys.ownedBy(RING, "n", "k", OWNER);

    counts.counted(
        List.of(countedHere(key)),
        List.of(counted()),
        OWNER,
        new PeerException(OWNER, "not calling peer '" + OWNER + "'", null));

    assertThat(counts.takeFor(OWNER, RING).keys()).containsExactly("n_" + key);
  }

  @Test
  void counted_itemAnsweredWithAnError_notRemembered() {
    String key = RingKeys.ownedBy(RING, "n", "k", OWNER);
    RateLimitResponse failed = new RateLimitResponse(Status.UNDER_LIMIT, 5, 0, 0, "bad", Map.of());

    counts.counted(List.of(countedHere(key)), List.of(failed), OWNER, UNREACHED);

    assertThat(counts.isEmpty()).isTrue();
  }

  @Test
  void counted_globalItemAnsweredFromTheCopy_notRemembered() {
    String key = RingKeys.ownedBy(RING, "n", "k", OWNER);
    countedHere(key);
    RateLimitRequest global =
        RateLimitRequest.builder("n", key)
            .hits(1)
            .limit(5)
            .duration(60_000)
            .behavior(Behavior.GLOBAL)
            .build();

    counts.counted(List.of(global), List.of(counted()), OWNER, UNREACHED);

    assertThat(counts.isEmpty()).isTrue();
  }

  @Test
  void hasFor_onlyAnOwnerWithKeysRemembered() {
    String key = RingKeys.ownedBy(RING, "n", "k", OWNER);
    counts.counted(List.of(countedHere(key)), List.of(counted()), OWNER, UNREACHED);

    assertThat(counts.hasFor(OWNER)).isTrue();
    assertThat(counts.hasFor(THIRD)).isFalse();
    counts.takeFor(OWNER, RING);
    assertThat(counts.hasFor(OWNER)).isFalse();
  }

  @Test
  void counted_sameKeyForAnotherOwner_rememberedForThatOwnerOnly() {
    String key = RingKeys.ownedBy(RING, "n", "k", OWNER);
    counts.counted(List.of(countedHere(key)), List.of(counted()), THIRD, UNREACHED);
    counts.counted(List.of(countedHere(key)), List.of(counted()), OWNER, UNREACHED);

    assertThat(counts.hasFor(THIRD)).isFalse();
    assertThat(counts.takeFor(OWNER, RING).keys()).containsExactly("n_" + key);
  }

  @Test
  void takeFor_bucketExpired_keyForgotten() {
    String key = RingKeys.ownedBy(RING, "n", "k", OWNER);
    counts.counted(List.of(countedHere(key)), List.of(counted()), OWNER, UNREACHED);

    clock.advance(Duration.ofSeconds(61));

    assertThat(counts.takeFor(OWNER, RING).keys()).isEmpty();
  }

  /**
   * A sliding window's count weighs on the next window, and a leaky bucket answers its reset time
   * as now once it holds a limit's worth: the bucket, not the answer, says how long it matters.
   */
  @Test
  void takeFor_answersResetPassedButTheBucketLives_keyTaken() {
    String key = RingKeys.ownedBy(RING, "n", "k", OWNER);
    counts.counted(
        List.of(countedHere(key, Duration.ofMinutes(2))),
        List.of(RateLimitResponse.of(Status.UNDER_LIMIT, 5, 4, clock.wallMillis())),
        OWNER,
        UNREACHED);

    clock.advance(Duration.ofSeconds(61));

    assertThat(counts.takeFor(OWNER, RING).keys()).containsExactly("n_" + key);
  }

  @Test
  void takeMovedOn_ringGivingTheKeyToAThirdNode_takenForThatNode() {
    String key = movingFromOwnerTo(THIRD);
    String hashKey = "n_" + key;
    counts.counted(List.of(countedHere(key)), List.of(counted()), OWNER, UNREACHED);

    FallbackCounts.Taken taken = counts.takeMovedOn(WITHOUT_OWNER, SELF);

    assertThat(taken.keys()).containsExactly(hashKey);
    assertThat(counts.isEmpty()).isTrue();
    counts.sendFailed(taken, Set.of(hashKey));
    assertThat(counts.takeFor(THIRD, WITHOUT_OWNER).keys())
        .as("remembered again for the node it was sent to")
        .containsExactly(hashKey);
  }

  @Test
  void takeMovedOn_ringGivingTheKeyToThisNode_forgottenNotTaken() {
    String key = movingFromOwnerTo(SELF);
    counts.counted(List.of(countedHere(key)), List.of(counted()), OWNER, UNREACHED);

    FallbackCounts.Taken taken = counts.takeMovedOn(WITHOUT_OWNER, SELF);

    assertThat(taken.isEmpty()).isTrue();
    assertThat(counts.isEmpty()).isTrue();
  }

  @Test
  void takeMovedOn_ringStillGivingTheKeyToItsOwner_keptForIt() {
    String key = RingKeys.ownedBy(RING, "n", "k", OWNER);
    counts.counted(List.of(countedHere(key)), List.of(counted()), OWNER, UNREACHED);

    assertThat(counts.takeMovedOn(RING, SELF).isEmpty()).isTrue();
    assertThat(counts.takeFor(OWNER, RING).keys()).containsExactly("n_" + key);
  }

  @Test
  void sendFailed_rememberedAgainOnceThenLost() {
    String key = RingKeys.ownedBy(RING, "n", "k", OWNER);
    counts.counted(List.of(countedHere(key)), List.of(counted()), OWNER, UNREACHED);

    FallbackCounts.Taken first = counts.takeFor(OWNER, RING);
    assertThat(counts.sendFailed(first, first.keys())).as("lost after the first send").isZero();
    FallbackCounts.Taken second = counts.takeFor(OWNER, RING);
    assertThat(second.keys()).containsExactly("n_" + key);
    assertThat(counts.sendFailed(second, second.keys())).as("lost after the second send").isOne();

    assertThat(counts.hasFor(OWNER)).isFalse();
  }

  @Test
  void sendFailed_keyCountedAgainMeanwhile_newerEntryKept() {
    String key = RingKeys.ownedBy(RING, "n", "k", OWNER);
    counts.counted(List.of(countedHere(key)), List.of(counted()), OWNER, UNREACHED);
    FallbackCounts.Taken first = counts.takeFor(OWNER, RING);
    counts.counted(List.of(countedHere(key)), List.of(counted()), OWNER, UNREACHED);
    counts.sendFailed(first, first.keys());

    FallbackCounts.Taken second = counts.takeFor(OWNER, RING);
    assertThat(counts.sendFailed(second, second.keys()))
        .as("the newer entry, sent once, is remembered again")
        .isZero();
  }

  @Test
  void takeFor_ringGivingTheKeyToAThirdNode_keySkippedAndLeftForTheRingChange() {
    String key = movingFromOwnerTo(THIRD);
    counts.counted(List.of(countedHere(key)), List.of(counted()), OWNER, UNREACHED);

    assertThat(counts.takeFor(OWNER, WITHOUT_OWNER).keys()).isEmpty();
    assertThat(counts.takeMovedOn(WITHOUT_OWNER, SELF).keys())
        .as("the ring change's hand-off, queued behind the hand-back, still finds it")
        .containsExactly("n_" + key);
    assertThat(counts.isEmpty()).isTrue();
  }

  // The first key k0, k1, ... whose bucket RING gives to OWNER and WITHOUT_OWNER to to.
  private static String movingFromOwnerTo(String to) {
    for (int i = 0; ; i++) {
      String hashKey = "n_k" + i;
      if (RING.ownerOf(hashKey).equals(OWNER) && WITHOUT_OWNER.ownerOf(hashKey).equals(to)) {
        return "k" + i;
      }
    }
  }
}
