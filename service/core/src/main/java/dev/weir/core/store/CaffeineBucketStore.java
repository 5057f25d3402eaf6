package dev.weir.core.store;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;
import com.github.benmanes.caffeine.cache.RemovalCause;
import com.github.benmanes.caffeine.cache.Scheduler;
import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.Decision;
import dev.weir.core.engine.SaturatingMath;
import dev.weir.core.metrics.CacheStatistics;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.time.Clock;
import java.util.Optional;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * A {@link BucketStore} on a Caffeine cache: per-key atomic updates through {@code
 * asMap().compute}, each entry expiring at its state's {@link BucketState#expireAt()}, and at most
 * {@code maximumSize} entries, evicting the least used (Caffeine's W-TinyLFU) when full. The only
 * class that imports Caffeine.
 *
 * <p>Design: Caffeine measures expiry in nanoseconds of its {@code Ticker}, here the injected
 * clock's monotonic reading, while states carry wall-clock milliseconds. Each write therefore
 * converts {@code expireAt - clock.wallMillis()} into a duration. Reads also compare {@code
 * expireAt} with the wall clock, so a state is never handed out after its {@code expireAt} even if
 * the two readings drift. No scheduler is used: expired entries are removed during later reads and
 * writes (or {@link #cleanUp()}), and maintenance runs on the given executor ({@code Runnable::run}
 * in tests).
 */
public final class CaffeineBucketStore implements BucketStore, CacheStatistics {

  private static final long MAX_EXPIRY_NANOS = Long.MAX_VALUE >> 1;

  private final Clock clock;
  private final Cache<String, BucketState> cache;
  private final ConcurrentMap<String, BucketState> map;
  private final LongAdder hits = new LongAdder();
  private final LongAdder misses = new LongAdder();
  private final LongAdder evictions = new LongAdder();

  /** Creates a store of at most {@code maximumSize} buckets, maintained on the common pool. */
  public CaffeineBucketStore(Clock clock, long maximumSize) {
    this(clock, maximumSize, ForkJoinPool.commonPool());
  }

  /**
   * Creates a store of at most {@code maximumSize} buckets whose maintenance (eviction bookkeeping,
   * listeners) runs on {@code executor}.
   *
   * @throws IllegalArgumentException if {@code maximumSize} is negative
   */
  public CaffeineBucketStore(Clock clock, long maximumSize, Executor executor) {
    if (maximumSize < 0) {
      throw new IllegalArgumentException("maximumSize must be 0 or more, got " + maximumSize);
    }
    this.clock = clock;
    this.cache =
        Caffeine.newBuilder()
            .maximumSize(maximumSize)
            .ticker(clock::monotonicNanos)
            .executor(executor)
            .scheduler(Scheduler.disabledScheduler())
            .expireAfter(new StateExpiry())
            .evictionListener(
                (String key, BucketState state, RemovalCause cause) -> {
                  if (cause == RemovalCause.SIZE) {
                    evictions.increment();
                  }
                })
            .build();
    this.map = cache.asMap();
  }

  @Override
  public RateLimitResponse update(String key, Function<BucketState, Decision> update) {
    RateLimitResponse[] answer = new RateLimitResponse[1];
    map.compute(
        key,
        (k, current) -> {
          BucketState live = live(current);
          (live == null ? misses : hits).increment();
          Decision decision = update.apply(live);
          answer[0] = decision.response();
          return decision.next();
        });
    return answer[0];
  }

  @Override
  public Optional<BucketState> get(String key) {
    BucketState live = live(cache.getIfPresent(key));
    (live == null ? misses : hits).increment();
    return Optional.ofNullable(live);
  }

  @Override
  public void put(String key, BucketState state) {
    map.put(key, state);
  }

  @Override
  public void remove(String key) {
    map.remove(key);
  }

  @Override
  public boolean remove(String key, BucketState expected) {
    return map.remove(key, expected);
  }

  @Override
  public void forEach(BiConsumer<String, BucketState> action) {
    long now = clock.wallMillis();
    map.forEach(
        (key, state) -> {
          if (now < state.expireAt()) {
            action.accept(key, state);
          }
        });
  }

  @Override
  public long size() {
    return cache.estimatedSize();
  }

  /** Runs pending maintenance now: drops expired entries and applies size eviction. */
  public void cleanUp() {
    cache.cleanUp();
  }

  /** Returns how many reads and updates found a live state. */
  @Override
  public long hitCount() {
    return hits.sum();
  }

  /** Returns how many reads and updates found no live state. */
  @Override
  public long missCount() {
    return misses.sum();
  }

  /** Returns how many unexpired buckets were evicted because the store was full. */
  @Override
  public long evictionCount() {
    return evictions.sum();
  }

  private BucketState live(BucketState state) {
    return state != null && clock.wallMillis() < state.expireAt() ? state : null;
  }

  private final class StateExpiry implements Expiry<String, BucketState> {

    @Override
    public long expireAfterCreate(String key, BucketState state, long currentTime) {
      return nanosUntil(state.expireAt());
    }

    @Override
    public long expireAfterUpdate(
        String key, BucketState state, long currentTime, long currentDuration) {
      return nanosUntil(state.expireAt());
    }

    @Override
    public long expireAfterRead(
        String key, BucketState state, long currentTime, long currentDuration) {
      return currentDuration;
    }

    private long nanosUntil(long expireAt) {
      long millis = SaturatingMath.sub(expireAt, clock.wallMillis());
      if (millis <= 0) {
        return 0;
      }
      return millis >= MAX_EXPIRY_NANOS / 1_000_000 ? MAX_EXPIRY_NANOS : millis * 1_000_000;
    }
  }
}
