package dev.weir.core.store;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;
import com.github.benmanes.caffeine.cache.Policy;
import com.github.benmanes.caffeine.cache.Policy.VarExpiration;
import com.github.benmanes.caffeine.cache.RemovalCause;
import com.github.benmanes.caffeine.cache.Scheduler;
import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.Decision;
import dev.weir.core.engine.SaturatingMath;
import dev.weir.core.metrics.CacheStatistics;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.time.Clock;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * A {@link BucketStore} on a Caffeine cache of mutable per-key cells: at most {@code maximumSize}
 * buckets, the least used (Caffeine's W-TinyLFU) evicted when full, each dropped some time after
 * its state's {@link BucketState#expireAt()}. The only class that imports Caffeine.
 *
 * <p>Design: a Caffeine write (write buffer, timer wheel, maintenance) costs about ten times a read,
 * so a decision on a known key is a read: a lookup finds the key's {@link Cell}, and the state is
 * replaced under the cell's monitor, which makes updates of one key atomic without a Caffeine write.
 * Even a read has a cost (the read buffer, and maintenance each time it fills), so only one
 * decision in {@value #RECORD_EVERY} per cell is recorded as an access for the eviction policy; the
 * others look the cell up quietly. Frequencies are then sampled evenly, which keeps W-TinyLFU's
 * order: a key used fewer times than that looks unused, and those are the ones to evict anyway. Only two things write: creating a key (the engine then runs inside Caffeine's
 * {@code compute}, so two creators of one key cannot both start from nothing) and re-arming the
 * cell's expiry, which happens only when a state's {@code expireAt} passes the time the cell is
 * armed until. A cell is armed until {@code expireAt} plus the state's remaining lifetime, so a
 * bucket whose {@code expireAt} moves forward on every hit (the leaky bucket) is re-armed about
 * once per half its lifetime, and Caffeine never drops a cell whose state is still live. A cell that
 * was removed or replaced (by this store or by Caffeine) is marked, and an update that finds a
 * marked cell starts again from the map. Lock order: a cell's monitor, then Caffeine's; nothing
 * takes a cell's monitor inside a Caffeine computation, which holds Caffeine's.
 *
 * <p>Caffeine measures expiry in nanoseconds of its {@code Ticker}, here the injected clock's
 * monotonic reading, while states carry wall-clock milliseconds; each arming converts the remaining
 * wall-clock time into a duration, and reads compare {@code expireAt} with the wall clock, so a
 * state is never handed out after its {@code expireAt} even if the two readings drift. No scheduler
 * is used: expired cells are removed during later reads and writes (or {@link #cleanUp()}), and
 * maintenance runs on the given executor, by default on the caller's thread, so that no decision
 * wakes another thread.
 */
public final class CaffeineBucketStore implements BucketStore, CacheStatistics {

  private static final long MAX_EXPIRY_NANOS = Long.MAX_VALUE >> 1;

  /** One decision in this many per cell is recorded as an access for the eviction policy. */
  static final int RECORD_EVERY = 8;

  private final Clock clock;
  private final Cache<String, Cell> cache;
  private final ConcurrentMap<String, Cell> map;
  private final VarExpiration<String, Cell> expiration;
  private final Policy<String, Cell> policy;
  private final LongAdder hits = new LongAdder();
  private final LongAdder misses = new LongAdder();
  private final LongAdder evictions = new LongAdder();

  /**
   * Creates a store of at most {@code maximumSize} buckets whose maintenance runs on the calling
   * threads.
   */
  public CaffeineBucketStore(Clock clock, long maximumSize) {
    this(clock, maximumSize, Runnable::run);
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
            .expireAfter(new CellExpiry())
            .evictionListener(
                (String key, Cell cell, RemovalCause cause) -> {
                  if (cell != null) {
                    cell.removed = true;
                  }
                  if (cause == RemovalCause.SIZE) {
                    evictions.increment();
                  }
                })
            .build();
    this.map = cache.asMap();
    this.policy = cache.policy();
    this.expiration = policy.expireVariably().orElseThrow();
  }

  @Override
  public RateLimitResponse update(String key, Function<BucketState, Decision> update) {
    while (true) {
      Cell cell = policy.getIfPresentQuietly(key);
      if (cell != null && (++cell.decisions & (RECORD_EVERY - 1)) == 0) {
        cache.getIfPresent(key);
      }
      if (cell == null) {
        Creation creation = new Creation(update);
        cell = map.compute(key, creation);
        if (creation.response != null) {
          return creation.response;
        }
      }
      synchronized (cell) {
        if (cell.removed) {
          continue;
        }
        long now = clock.wallMillis();
        BucketState live = cell.live(now);
        (live == null ? misses : hits).increment();
        Decision decision = update.apply(live);
        BucketState next = decision.next();
        if (next == null) {
          cell.state = null;
          cell.removed = true;
          map.remove(key, cell);
        } else {
          cell.state = next;
          if (next.expireAt() > cell.armedUntil) {
            cell.armedUntil = armedUntil(next.expireAt(), now);
            expiration.setExpiresAfter(key, Duration.ofNanos(nanosUntil(cell.armedUntil, now)));
          }
        }
        return decision.response();
      }
    }
  }

  @Override
  public Optional<BucketState> get(String key) {
    Cell cell = cache.getIfPresent(key);
    BucketState live = cell == null ? null : cell.live(clock.wallMillis());
    (live == null ? misses : hits).increment();
    return Optional.ofNullable(live);
  }

  @Override
  public void put(String key, BucketState state) {
    Cell fresh = new Cell(state, armedUntil(state.expireAt(), clock.wallMillis()));
    Cell old = map.put(key, fresh);
    if (old != null) {
      old.removed = true;
    }
  }

  @Override
  public void remove(String key) {
    Cell old = map.remove(key);
    if (old != null) {
      old.removed = true;
    }
  }

  @Override
  public boolean remove(String key, BucketState expected) {
    while (true) {
      Cell cell = map.get(key);
      long now = clock.wallMillis();
      if (cell == null) {
        return false;
      }
      synchronized (cell) {
        if (cell.removed) {
          continue;
        }
        BucketState live = cell.live(now);
        if (live == null || !live.equals(expected)) {
          return false;
        }
        cell.removed = true;
        cell.state = null;
        map.remove(key, cell);
        return true;
      }
    }
  }

  @Override
  public void forEach(BiConsumer<String, BucketState> action) {
    long now = clock.wallMillis();
    map.forEach(
        (key, cell) -> {
          BucketState live = cell.live(now);
          if (live != null) {
            action.accept(key, live);
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

  /**
   * Returns the wall-clock time a cell holding a state that expires at {@code expireAt} is kept
   * until: {@code expireAt} plus the state's remaining lifetime at {@code now}.
   */
  static long armedUntil(long expireAt, long now) {
    return SaturatingMath.add(expireAt, Math.max(0, SaturatingMath.sub(expireAt, now)));
  }

  private static long nanosUntil(long wallMillis, long now) {
    long millis = SaturatingMath.sub(wallMillis, now);
    if (millis <= 0) {
      return 0;
    }
    return millis >= MAX_EXPIRY_NANOS / 1_000_000 ? MAX_EXPIRY_NANOS : millis * 1_000_000;
  }

  /**
   * One key's slot: its current state and how long Caffeine keeps it. The fields are read and
   * written under the cell's monitor, except the volatile ones, which readers outside it see.
   */
  static final class Cell {
    volatile BucketState state;
    volatile boolean removed;
    long armedUntil;

    /** Decisions on this cell, counted racily: it only spaces out recorded accesses. */
    byte decisions;

    Cell(BucketState state, long armedUntil) {
      this.state = state;
      this.armedUntil = armedUntil;
    }

    BucketState live(long now) {
      BucketState s = state;
      return s != null && now < s.expireAt() ? s : null;
    }
  }

  /**
   * The remapping of a key {@link #update} found absent: when the key is still absent (or its cell
   * was removed) it runs the engine inside Caffeine's atomic {@code compute} and stores a new cell;
   * when another thread created the key meanwhile it keeps that cell and leaves {@link #response}
   * null, so the caller updates the cell like any other.
   */
  private final class Creation implements java.util.function.BiFunction<String, Cell, Cell> {
    private final Function<BucketState, Decision> update;
    private RateLimitResponse response;

    Creation(Function<BucketState, Decision> update) {
      this.update = update;
    }

    @Override
    public Cell apply(String key, Cell existing) {
      if (existing != null && !existing.removed) {
        return existing;
      }
      long now = clock.wallMillis();
      misses.increment();
      Decision decision = update.apply(null);
      response = decision.response();
      BucketState next = decision.next();
      return next == null ? null : new Cell(next, armedUntil(next.expireAt(), now));
    }
  }

  private final class CellExpiry implements Expiry<String, Cell> {

    @Override
    public long expireAfterCreate(String key, Cell cell, long currentTime) {
      return nanosUntil(cell.armedUntil, clock.wallMillis());
    }

    @Override
    public long expireAfterUpdate(String key, Cell cell, long currentTime, long currentDuration) {
      return nanosUntil(cell.armedUntil, clock.wallMillis());
    }

    @Override
    public long expireAfterRead(String key, Cell cell, long currentTime, long currentDuration) {
      return currentDuration;
    }
  }
}
