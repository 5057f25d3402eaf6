package dev.weir.core.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.Decision;
import dev.weir.core.engine.FixedWindowState;
import dev.weir.core.engine.LeakyBucketState;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.engine.SlidingWindowState;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.Algorithm;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ClockBucketStoreTest {

  private final FakeClock clock = new FakeClock();
  private final RateLimitEngine engine = new RateLimitEngine(ZoneOffset.UTC);
  private final ClockBucketStore store = new ClockBucketStore(clock, 1000);

  private RateLimitResponse hit(String key, RateLimitRequest request) {
    long now = clock.wallMillis();
    return store.update(key, now, prior -> engine.apply(prior, request, now));
  }

  private static RateLimitRequest token(long hits) {
    return RateLimitRequest.builder("n", "k").limit(2).duration(1000).hits(hits).build();
  }

  private static RateLimitRequest leaky(long hits) {
    return RateLimitRequest.builder("n", "k")
        .algorithm(Algorithm.LEAKY_BUCKET)
        .limit(10)
        .duration(1000)
        .hits(hits)
        .build();
  }

  @Test
  void putGetAndUpdate_everyKindOfState_comesBackFieldForField() {
    long expireAt = clock.wallMillis() + 1000;
    List<BucketState> states =
        List.of(
            new TokenBucketState(Status.UNDER_LIMIT, 11, 12, 13, 14, expireAt),
            new TokenBucketState(Status.OVER_LIMIT, 21, 22, 23, 24, expireAt + 1),
            new LeakyBucketState(31, 32, 33, 34, 35, expireAt + 2),
            new FixedWindowState(41, 42, 43, 44, expireAt + 3),
            new SlidingWindowState(51, 52, 53, 54, 55, expireAt + 4));
    for (BucketState state : states) {
      store.put("put", state);
      assertThat(store.get("put")).contains(state);
      store.update(
          "updated",
          clock.wallMillis(),
          prior -> new Decision(state, RateLimitResponse.error("x")));
      assertThat(store.get("updated")).contains(state);
    }
    Map<String, BucketState> visited = new HashMap<>();
    store.forEach(visited::put);
    assertThat(visited).containsEntry("put", states.get(4)).containsEntry("updated", states.get(4));
  }

  @Test
  void removeIfUnchanged_stateChangedMeanwhile_keptAndReportsFalse() {
    hit("k", token(1));
    dev.weir.core.engine.BucketState snapshot = store.get("k").orElseThrow();
    hit("k", token(1));

    assertThat(store.remove("k", snapshot)).isFalse();
    assertThat(store.get("k")).isPresent();
    assertThat(store.remove("k", store.get("k").orElseThrow())).isTrue();
    assertThat(store.get("k")).isEmpty();
  }

  @Test
  void update_absentKey_passesNullAndStoresTheNextState() {
    BucketState[] seen = {new FixedWindowState(0, 0, 0, 0, 0)};
    FixedWindowState next = new FixedWindowState(1, 1000, 0, 1, clock.wallMillis() + 1000);
    RateLimitResponse answer = RateLimitResponse.of(Status.UNDER_LIMIT, 1, 0, 0);
    RateLimitResponse r =
        store.update(
            "a",
            clock.wallMillis(),
            prior -> {
              seen[0] = prior;
              return new Decision(next, answer);
            });
    assertThat(seen[0]).isNull();
    assertThat(r).isSameAs(answer);
    assertThat(store.get("a")).contains(next);
    assertThat(store.missCount()).isEqualTo(1);
    assertThat(store.hitCount()).isEqualTo(1);
  }

  @Test
  void update_nullNextState_removesTheKey() {
    hit("k", token(1));
    store.update(
        "k",
        clock.wallMillis(),
        prior -> new Decision(null, RateLimitResponse.of(Status.UNDER_LIMIT, 0, 0, 0)));
    assertThat(store.get("k")).isEmpty();
    assertThat(store.size()).isZero();
  }

  @Test
  void tokenBucket_notServedAfterItsResetTime_removedByCleanUp() {
    hit("k", token(2));
    clock.advanceMillis(1000);
    assertThat(store.get("k")).isPresent();
    assertThat(hit("k", token(1)).status()).isEqualTo(Status.OVER_LIMIT);
    clock.advanceMillis(1);
    assertThat(store.get("k")).isEmpty();
    assertThat(store.size()).isEqualTo(1);
    store.cleanUp();
    assertThat(store.size()).isZero();
    assertThat(hit("k", token(1)).remaining()).isEqualTo(1);
  }

  @Test
  void leakyBucket_keptWhileHitThenDroppedAfterItsLastLifetime() {
    for (int i = 0; i < 10; i++) {
      hit("k", leaky(1));
      clock.advanceMillis(400);
      store.cleanUp();
      assertThat(store.get("k")).as("after hit %d", i).isPresent();
      assertThat(store.size()).isEqualTo(1);
    }
    clock.advanceMillis(2000);
    store.cleanUp();
    assertThat(store.get("k")).isEmpty();
    assertThat(store.size()).isZero();
  }

  @Test
  void leakyBucket_expiresDurationAfterItsLastNonZeroHit() {
    hit("k", leaky(1));
    clock.advanceMillis(900);
    hit("k", leaky(1));
    clock.advanceMillis(900);
    hit("k", leaky(0));
    assertThat(store.get("k")).isPresent();
    clock.advanceMillis(100);
    assertThat(store.get("k")).isPresent();
    clock.advanceMillis(1);
    assertThat(store.get("k")).isEmpty();
  }

  private BucketState priorAt(String key, long at, BucketState next) {
    BucketState[] seen = new BucketState[1];
    store.update(
        key,
        at,
        prior -> {
          seen[0] = prior;
          return new Decision(next, RateLimitResponse.of(Status.UNDER_LIMIT, 0, 0, 0));
        });
    return seen[0];
  }

  @Test
  void update_stateExpiredAtTheUpdatesTime_isPassedAsAbsent() {
    long expireAt = clock.wallMillis() + 5;
    FixedWindowState state = new FixedWindowState(1, 1000, 0, 1, expireAt);
    store.put("k", state);

    assertThat(priorAt("k", expireAt, state)).isNull();
    assertThat(store.get("k")).contains(state);
  }

  @Test
  void update_stateExpiredOnTheClockButLiveAtTheUpdatesTime_isPassedAndItsNextStateKept() {
    long expireAt = clock.wallMillis() + 5;
    FixedWindowState state = new FixedWindowState(1, 1000, 0, 1, expireAt);
    FixedWindowState next = new FixedWindowState(1, 1000, 0, 2, expireAt);
    store.put("k", state);
    clock.advanceMillis(10);

    assertThat(priorAt("k", expireAt - 1, next)).isEqualTo(state);
    assertThat(priorAt("k", expireAt - 1, next)).isEqualTo(next);
    assertThat(store.get("k")).isEmpty();
    store.cleanUp();
    assertThat(store.size()).isZero();
  }

  @Test
  void update_absentKeyWithANextStateAlreadyExpiredOnTheClock_keepsItForLaterUpdates() {
    long at = clock.wallMillis() - 10;
    FixedWindowState next = new FixedWindowState(1, 1000, 0, 1, at + 5);

    assertThat(priorAt("k", at, next)).isNull();
    assertThat(priorAt("k", at, next)).isEqualTo(next);
    assertThat(store.size()).isEqualTo(1);
  }

  @Test
  void put_alreadyExpiredState_isNeverVisible() {
    store.put("k", new FixedWindowState(1, 1000, 0, 1, clock.wallMillis()));
    assertThat(store.get("k")).isEmpty();
    Map<String, BucketState> seen = new HashMap<>();
    store.forEach(seen::put);
    assertThat(seen).isEmpty();
  }

  @Test
  void forEach_visitsLiveEntriesOnly() {
    FixedWindowState longLived = new FixedWindowState(1, 1000, 0, 1, clock.wallMillis() + 100);
    store.put("long", longLived);
    store.put("short", new FixedWindowState(1, 1000, 0, 1, clock.wallMillis() + 10));
    clock.advanceMillis(10);
    Map<String, BucketState> seen = new HashMap<>();
    store.forEach(seen::put);
    assertThat(seen).containsExactly(Map.entry("long", longLived));
  }

  @Test
  void remove_dropsTheKey() {
    hit("k", token(1));
    store.remove("k");
    assertThat(store.get("k")).isEmpty();
  }

  @Test
  void update_whenFull_evictsDownToTheMaximumSize() {
    ClockBucketStore small = new ClockBucketStore(clock, 10);
    for (int i = 0; i < 100; i++) {
      long now = clock.wallMillis();
      small.update("key" + i, now, prior -> engine.apply(prior, token(1), now));
    }
    small.cleanUp();
    assertThat(small.size()).isEqualTo(10);
    assertThat(small.evictionCount()).isEqualTo(90);
  }

  @Test
  void update_frequentlyUsedKey_survivesAScanOfNewKeys() {
    ClockBucketStore small = new ClockBucketStore(clock, 10);
    long now = clock.wallMillis();
    RateLimitRequest big =
        RateLimitRequest.builder("n", "k").limit(1_000_000).duration(1000).build();
    for (int i = 0; i < 50; i++) {
      small.update("hot", now, prior -> engine.apply(prior, big, now));
    }
    for (int i = 0; i < 200; i++) {
      small.update("cold" + i, now, prior -> engine.apply(prior, big, now));
      small.update("hot", now, prior -> engine.apply(prior, big, now));
    }
    small.cleanUp();
    assertThat(small.get("hot")).isPresent();
  }

  @Test
  void update_twoThreadsOnOneKey_loseNoUpdate() throws Exception {
    int perThread = 50_000;
    long expireAt = clock.wallMillis() + 60_000;
    ExecutorService pool = Executors.newFixedThreadPool(2);
    CountDownLatch start = new CountDownLatch(1);
    try {
      Runnable work =
          () -> {
            try {
              start.await();
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              return;
            }
            for (int i = 0; i < perThread; i++) {
              store.update(
                  "shared",
                  clock.wallMillis(),
                  prior -> {
                    long count = prior == null ? 0 : ((FixedWindowState) prior).count();
                    return new Decision(
                        new FixedWindowState(0, 0, 0, count + 1, expireAt),
                        RateLimitResponse.of(Status.UNDER_LIMIT, 0, 0, 0));
                  });
            }
          };
      Future<?> a = pool.submit(work);
      Future<?> b = pool.submit(work);
      start.countDown();
      a.get(60, TimeUnit.SECONDS);
      b.get(60, TimeUnit.SECONDS);
    } finally {
      pool.shutdownNow();
    }
    assertThat(store.get("shared"))
        .map(s -> ((FixedWindowState) s).count())
        .contains(2L * perThread);
  }

  @Test
  void update_whenFull_evictsExpiredBucketsFirstWithoutCountingThem() {
    ClockBucketStore small = new ClockBucketStore(clock, 10);
    for (int i = 0; i < 10; i++) {
      small.put("old" + i, new FixedWindowState(1, 1000, 0, 1, clock.wallMillis() + 5));
    }
    clock.advanceMillis(5);
    for (int i = 0; i < 10; i++) {
      long now = clock.wallMillis();
      small.update("new" + i, now, prior -> engine.apply(prior, token(1), now));
    }
    assertThat(small.size()).isEqualTo(10);
    assertThat(small.evictionCount()).isZero();
    for (int i = 0; i < 10; i++) {
      assertThat(small.get("new" + i)).as("new%d", i).isPresent();
    }
  }

  @Test
  void update_newKeys_sweepExpiredBucketsWithoutSizePressure() {
    ClockBucketStore oneSegment = new ClockBucketStore(clock, 100);
    for (int i = 0; i < 10; i++) {
      oneSegment.put("old" + i, new FixedWindowState(1, 1000, 0, 1, clock.wallMillis() + 5));
    }
    clock.advanceMillis(5);
    for (int i = 0; i < 20; i++) {
      long now = clock.wallMillis();
      oneSegment.update("new" + i, now, prior -> engine.apply(prior, token(1), now));
    }
    assertThat(oneSegment.size()).isEqualTo(20);
    assertThat(oneSegment.evictionCount()).isZero();
  }

  @Test
  void size_manySegmentsFilled_sumsToTheMaximumSizeExactly() {
    ClockBucketStore split = new ClockBucketStore(clock, 1000);
    assertThat(split.segmentCount()).isEqualTo(8);
    long now = clock.wallMillis();
    for (int i = 0; i < 20_000; i++) {
      split.update("key" + i, now, prior -> engine.apply(prior, token(1), now));
    }
    assertThat(split.size()).isEqualTo(1000);
    assertThat(split.evictionCount()).isEqualTo(19_000);
  }

  @Test
  void hasRoomFor_aKeyWhoseSegmentIsFull_isFalseUnlessTheKeyIsHeld() {
    ClockBucketStore split = new ClockBucketStore(clock, 1000);
    BucketState state = new FixedWindowState(1, 60_000, 0, 1, clock.wallMillis() + 60_000);
    List<String> refused = new ArrayList<>();
    for (int i = 0; i < 5_000; i++) {
      String key = "key" + i;
      if (split.hasRoomFor(key)) {
        split.put(key, state);
      } else {
        refused.add(key);
      }
    }

    assertThat(split.evictionCount()).as("a key with room evicts nothing").isZero();
    assertThat(split.size()).as("every segment filled").isEqualTo(1000);
    assertThat(refused).hasSize(4_000).noneMatch(split::hasRoomFor);
    assertThat(split.hasRoomFor("key0")).as("held").isTrue();
  }

  @Test
  void capacityToHold_keysSpreadOverTheSegments_noneEvicted() {
    ClockBucketStore oneSegment = new ClockBucketStore(clock, 100);
    assertThat(oneSegment.capacityToHold(100)).as("one segment needs no slack").isEqualTo(100);
    assertThat(oneSegment.capacityToHold(12_800))
        .as("64 segments: 12800 + 4 * sqrt(12800 * 63)")
        .isEqualTo(16_392);

    ClockBucketStore sized = new ClockBucketStore(clock, oneSegment.capacityToHold(12_800));
    BucketState state = new FixedWindowState(1, 60_000, 0, 1, clock.wallMillis() + 60_000);
    for (int i = 0; i < 12_800; i++) {
      sized.put("h_10.0.0.1:1051/" + i, state);
    }
    assertThat(sized.segmentCount()).isEqualTo(64);
    assertThat(sized.evictionCount()).isZero();
    assertThat(sized.size()).isEqualTo(12_800);
  }

  @Test
  void operations_randomMixAgainstAMap_agreeAfterEveryStep() {
    Random random = new Random(42);
    Map<String, BucketState> model = new HashMap<>();
    long expireAt = clock.wallMillis() + 60_000;
    for (int step = 0; step < 200_000; step++) {
      String key = "k" + random.nextInt(300);
      switch (random.nextInt(4)) {
        case 0 -> {
          BucketState state = new FixedWindowState(1, 1000, 0, step, expireAt);
          store.put(key, state);
          model.put(key, state);
        }
        case 1 -> {
          store.remove(key);
          model.remove(key);
        }
        case 2 -> {
          BucketState state = new FixedWindowState(1, 1000, 0, step, expireAt);
          store.update(key, clock.wallMillis(), prior -> new Decision(state, null));
          model.put(key, state);
        }
        default -> {
          store.update(key, clock.wallMillis(), prior -> new Decision(null, null));
          model.remove(key);
        }
      }
      assertThat(store.get(key)).as("step %d", step).isEqualTo(Optional.ofNullable(model.get(key)));
    }
    Map<String, BucketState> seen = new HashMap<>();
    store.forEach(seen::put);
    assertThat(seen).isEqualTo(model);
    assertThat(store.size()).isEqualTo(model.size());
  }

  @Test
  void update_threadsOnDistinctKeysOfAFullStore_keepTheBound() throws Exception {
    ClockBucketStore small = new ClockBucketStore(clock, 500);
    long now = clock.wallMillis();
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      List<Future<?>> work = new ArrayList<>();
      for (int t = 0; t < 2; t++) {
        int thread = t;
        work.add(
            pool.submit(
                () -> {
                  for (int i = 0; i < 50_000; i++) {
                    small.update(
                        thread + ":" + (i % 2_000),
                        now,
                        prior -> engine.apply(prior, token(1), now));
                  }
                }));
      }
      for (Future<?> f : work) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(small.size()).isEqualTo(500);
    Map<String, BucketState> seen = new HashMap<>();
    small.forEach(seen::put);
    assertThat(seen).hasSize(500);
  }

  @Test
  void removeIfUnchanged_nullOrExpiredExpectation_keepsTheKeyAndReportsFalse() {
    FixedWindowState state = new FixedWindowState(1, 1000, 0, 1, clock.wallMillis() + 10);
    store.put("k", state);
    assertThat(store.remove("k", null)).isFalse();
    assertThat(store.get("k")).contains(state);
    clock.advanceMillis(10);
    assertThat(store.remove("k", state)).isFalse();
  }

  @Test
  void constructor_negativeSize_isRefusedWithTheValue() {
    assertThatThrownBy(() -> new ClockBucketStore(clock, -1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maximumSize must be 0 or more, got -1");
  }
}
