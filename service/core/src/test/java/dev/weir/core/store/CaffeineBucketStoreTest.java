package dev.weir.core.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.Decision;
import dev.weir.core.engine.FixedWindowState;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.model.Algorithm;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class CaffeineBucketStoreTest {

  private final FakeClock clock = new FakeClock();
  private final RateLimitEngine engine = new RateLimitEngine(ZoneOffset.UTC);
  private final CaffeineBucketStore store = new CaffeineBucketStore(clock, 1000, Runnable::run);

  private RateLimitResponse hit(String key, RateLimitRequest request) {
    long now = clock.wallMillis();
    return store.update(key, prior -> engine.apply(prior, request, now));
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
        "k", prior -> new Decision(null, RateLimitResponse.of(Status.UNDER_LIMIT, 0, 0, 0)));
    assertThat(store.get("k")).isEmpty();
    assertThat(store.size()).isZero();
  }

  @Test
  void tokenBucket_notServedAfterItsResetTime_droppedWithinOneMoreLifetime() {
    hit("k", token(2));
    clock.advanceMillis(1000);
    assertThat(store.get("k")).isPresent();
    assertThat(hit("k", token(1)).status()).isEqualTo(Status.OVER_LIMIT);
    clock.advanceMillis(1);
    assertThat(store.get("k")).isEmpty();
    store.cleanUp();
    assertThat(store.size()).isEqualTo(1);
    clock.advanceMillis(1001);
    store.cleanUp();
    assertThat(store.size()).isZero();
    assertThat(hit("k", token(1)).remaining()).isEqualTo(1);
  }

  @Test
  void armedUntil_expireAtPlusTheRemainingLifetime() {
    assertThat(CaffeineBucketStore.armedUntil(1_500, 1_000)).isEqualTo(2_000);
    assertThat(CaffeineBucketStore.armedUntil(1_000, 1_500)).isEqualTo(1_000);
    assertThat(CaffeineBucketStore.armedUntil(Long.MAX_VALUE, 0)).isEqualTo(Long.MAX_VALUE);
  }

  @Test
  void leakyBucket_hitPastItsFirstArming_keptByCaffeineThenDroppedAfterItsLastLifetime() {
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

  @Test
  void update_expiredState_isPassedAsAbsent() {
    store.put("k", new FixedWindowState(1, 1000, 0, 1, clock.wallMillis() + 5));
    clock.advanceMillis(5);
    BucketState[] seen = new BucketState[1];
    store.update(
        "k",
        prior -> {
          seen[0] = prior;
          return new Decision(prior, RateLimitResponse.of(Status.UNDER_LIMIT, 0, 0, 0));
        });
    assertThat(seen[0]).isNull();
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
    CaffeineBucketStore small = new CaffeineBucketStore(clock, 10, Runnable::run);
    for (int i = 0; i < 100; i++) {
      long now = clock.wallMillis();
      small.update("key" + i, prior -> engine.apply(prior, token(1), now));
    }
    small.cleanUp();
    assertThat(small.size()).isEqualTo(10);
    assertThat(small.evictionCount()).isEqualTo(90);
  }

  @Test
  void update_frequentlyUsedKey_survivesAScanOfNewKeys() {
    CaffeineBucketStore small = new CaffeineBucketStore(clock, 10, Runnable::run);
    long now = clock.wallMillis();
    RateLimitRequest big =
        RateLimitRequest.builder("n", "k").limit(1_000_000).duration(1000).build();
    for (int i = 0; i < 50; i++) {
      small.update("hot", prior -> engine.apply(prior, big, now));
    }
    for (int i = 0; i < 200; i++) {
      small.update("cold" + i, prior -> engine.apply(prior, big, now));
      small.update("hot", prior -> engine.apply(prior, big, now));
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
  void constructor_negativeSize_isRefusedWithTheValue() {
    assertThatThrownBy(() -> new CaffeineBucketStore(clock, -1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maximumSize must be 0 or more, got -1");
  }
}
