package dev.weir.core.store;

import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.Decision;
import dev.weir.core.engine.FixedWindowState;
import dev.weir.core.engine.LeakyBucketState;
import dev.weir.core.engine.SlidingWindowState;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.time.Clock;
import java.util.Optional;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * A {@link BucketStore} of at most {@code maximumSize} buckets in segments of open-addressed hash
 * tables, evicting with the CLOCK algorithm (an approximation of least recently used, like
 * Gubernator's LRU cache) when a segment is full.
 *
 * <p>Design: a key hashes to one of up to {@value #MAX_SEGMENTS} segments, each a linear-probing
 * table of {@link Entry} references and their keys' hashes guarded by the segment's monitor, so
 * one decision is a lock, a probe and the engine's function, and decisions on keys in different
 * segments run in parallel. An entry holds its key, a referenced bit and its state's fields inline
 * (the engine's immutable state is rebuilt for each decision and its result written back in
 * place); there is no per-entry node, list link, timer or frequency counter, which keeps a live
 * bucket's cost to its key, one entry and a table slot with its hash, and a decision to two
 * dependent reads besides the key: the slot and its hash (two independent reads), then the one
 * entry whose hash matches. The referenced bit is set by every use; when a full segment needs
 * room its clock hand walks the table, evicting the first entry that is expired or was not used
 * since the hand last passed it and clearing the bit of those that were. A new entry starts
 * unreferenced, so a scan of keys used once evicts its own kind before the keys in steady use.
 *
 * <p>Expiry is read, never scheduled: an update is handed the state only while it is live at the
 * update's time (a request's {@code created_at}, which may lag the clock), reads and scans only
 * while it is live on the injected wall clock. An entry expired on the clock stays until the clock
 * hand or each insertion's two-slot sweep reaches it or {@link #cleanUp()} runs. The segment count
 * and each segment's share of {@code maximumSize} are fixed at construction; the sum of the shares
 * is exactly {@code maximumSize}. The update functions run under the segment's monitor and must
 * not call back into the store.
 */
public final class ClockBucketStore implements BucketStore, CacheStatistics {

  /** The most segments a store is split into. */
  static final int MAX_SEGMENTS = 64;

  /** The fewest buckets per segment before a store is split further. */
  static final int MIN_SEGMENT_SIZE = 64;

  private final Clock clock;
  private final int maximumSize;
  private final Segment[] segments;
  private final int segmentShift;

  /**
   * Creates a store of at most {@code maximumSize} buckets (values above {@link Integer#MAX_VALUE}
   * count as that).
   *
   * @throws IllegalArgumentException if {@code maximumSize} is negative
   */
  public ClockBucketStore(Clock clock, long maximumSize) {
    if (maximumSize < 0) {
      throw new IllegalArgumentException("maximumSize must be 0 or more, got " + maximumSize);
    }
    this.clock = clock;
    int max = (int) Math.min(Integer.MAX_VALUE, maximumSize);
    this.maximumSize = max;
    int count = segmentCount(max);
    this.segments = new Segment[count];
    for (int i = 0; i < count; i++) {
      segments[i] = new Segment(max / count + (i < max % count ? 1 : 0));
    }
    this.segmentShift = 32 - Integer.numberOfTrailingZeros(count);
  }

  @Override
  public RateLimitResponse update(String key, long at, Function<BucketState, Decision> update) {
    int hash = hash(key);
    return segmentFor(hash).update(key, hash, at, update, clock.wallMillis());
  }

  @Override
  public Optional<BucketState> get(String key) {
    int hash = hash(key);
    return Optional.ofNullable(segmentFor(hash).get(key, hash, clock.wallMillis()));
  }

  @Override
  public void put(String key, BucketState state) {
    int hash = hash(key);
    segmentFor(hash).put(key, hash, state, clock.wallMillis());
  }

  @Override
  public void remove(String key) {
    int hash = hash(key);
    segmentFor(hash).remove(key, hash);
  }

  @Override
  public boolean remove(String key, BucketState expected) {
    int hash = hash(key);
    return segmentFor(hash).removeIfLive(key, hash, expected, clock.wallMillis());
  }

  /**
   * Calls {@code action} with every live bucket; each segment's live entries are copied under its
   * monitor and the action runs outside it.
   */
  @Override
  public void forEach(BiConsumer<String, BucketState> action) {
    long now = clock.wallMillis();
    for (Segment segment : segments) {
      Object[] live = segment.live(now);
      for (int i = 0; i < live.length; i += 2) {
        action.accept((String) live[i], (BucketState) live[i + 1]);
      }
    }
  }

  /** Returns how many entries are held, expired ones not yet removed included. */
  @Override
  public long size() {
    long size = 0;
    for (Segment segment : segments) {
      size += segment.size;
    }
    return size;
  }

  /**
   * Returns {@code maximumSize}: the sum of the segments' shares, each of which evicts once full,
   * so fewer buckets than this may already evict when their keys crowd one segment.
   */
  @Override
  public long capacity() {
    return maximumSize;
  }

  /**
   * Returns whether {@code key} is held or its segment is below its share of {@code maximumSize}
   * (expired entries not yet removed count as held), so that storing it evicts nothing.
   */
  @Override
  public boolean hasRoomFor(String key) {
    int hash = hash(key);
    return segmentFor(hash).hasRoomFor(key, hash);
  }

  /** Returns the index of the segment {@code key} goes to. */
  @Override
  public int partOf(String key) {
    return segmentShift == 32 ? 0 : hash(key) >>> segmentShift;
  }

  /** Returns the share of the capacity that segment {@code part} holds before it evicts. */
  @Override
  public long partCapacity(int part) {
    return segments[part].capacity;
  }

  /**
   * Returns {@code buckets} plus the slack the segments need: keys spread over the segments by
   * hash, not evenly, and a segment evicts once its share is full, so each share needs room for
   * four standard deviations of its keys above their mean ({@code 4 * sqrt(buckets * (segments -
   * 1))} in all, for the segment count of a store of the size returned; none for one segment).
   * With 64 segments a segment then overflows in about one store in 500.
   */
  @Override
  public long capacityToHold(long buckets) {
    long size = Math.max(0, buckets);
    for (int i = 0; i < 8; i++) {
      int segments = segmentCount(size);
      long next =
          Math.max(0, buckets) + (long) Math.ceil(4 * Math.sqrt((double) buckets * (segments - 1)));
      if (next == size) {
        break;
      }
      size = next;
    }
    return size;
  }

  /** Removes every expired entry now. */
  public void cleanUp() {
    long now = clock.wallMillis();
    for (Segment segment : segments) {
      segment.removeExpired(now);
    }
  }

  /** Returns how many reads and updates found a live state. */
  @Override
  public long hitCount() {
    long sum = 0;
    for (Segment segment : segments) {
      sum += segment.hits();
    }
    return sum;
  }

  /** Returns how many reads and updates found no live state. */
  @Override
  public long missCount() {
    long sum = 0;
    for (Segment segment : segments) {
      sum += segment.misses();
    }
    return sum;
  }

  /** Returns how many unexpired buckets were evicted because their segment was full. */
  @Override
  public long evictionCount() {
    long sum = 0;
    for (Segment segment : segments) {
      sum += segment.evictions();
    }
    return sum;
  }

  /** Returns how many segments the store is split into. */
  int segmentCount() {
    return segments.length;
  }

  // The segments of a store of maximumSize: a power of two, at most MAX_SEGMENTS, each of at least
  // MIN_SEGMENT_SIZE buckets while there is more than one.
  private static int segmentCount(long maximumSize) {
    int max = (int) Math.min(Integer.MAX_VALUE, maximumSize);
    return Integer.highestOneBit(Math.max(1, Math.min(MAX_SEGMENTS, max / MIN_SEGMENT_SIZE)));
  }

  // Fibonacci hashing spreads the key's hash into the high bits (which pick the segment), and the
  // xor-shift folds them back into the low bits (which pick the table slot).
  private static int hash(String key) {
    int h = key.hashCode() * 0x9E3779B9;
    return h ^ (h >>> 16);
  }

  private Segment segmentFor(int hash) {
    return segmentShift == 32 ? segments[0] : segments[hash >>> segmentShift];
  }

  /**
   * One key's bucket: its key, whether it was used since the hand passed, and its state's
   * fields held inline, so a decision reads and writes the bucket without a second object.
   *
   * <p>Every {@link BucketState} is at most six longs and, for a token bucket, a status; {@link
   * #kind} says which record the fields belong to and {@link #expireAt} is always the state's
   * {@code expireAt}. Fields are written in place, so a decision leaves no state object behind for
   * the collector to copy.
   */
  private static final class Entry {
    private static final byte TOKEN_UNDER = 0;
    private static final byte TOKEN_OVER = 1;
    private static final byte LEAKY = 2;
    private static final byte FIXED = 3;
    private static final byte SLIDING = 4;

    final String key;
    byte kind;
    boolean referenced;
    long a;
    long b;
    long c;
    long d;
    long e;
    long expireAt;

    Entry(String key, BucketState state) {
      this.key = key;
      write(state);
    }

    boolean liveAt(long now) {
      return now < expireAt;
    }

    void write(BucketState state) {
      if (state instanceof TokenBucketState t) {
        kind = t.status() == Status.OVER_LIMIT ? TOKEN_OVER : TOKEN_UNDER;
        set(t.limit(), t.duration(), t.remaining(), t.createdAt(), 0, t.expireAt());
      } else if (state instanceof LeakyBucketState l) {
        kind = LEAKY;
        set(l.limit(), l.duration(), l.burst(), l.remaining(), l.updatedAt(), l.expireAt());
      } else if (state instanceof FixedWindowState f) {
        kind = FIXED;
        set(f.limit(), f.duration(), f.windowStart(), f.count(), 0, f.expireAt());
      } else {
        SlidingWindowState w = (SlidingWindowState) state;
        kind = SLIDING;
        set(w.limit(), w.duration(), w.windowStart(), w.previousCount(), w.currentCount(),
            w.expireAt());
      }
    }

    private void set(long a, long b, long c, long d, long e, long expireAt) {
      this.a = a;
      this.b = b;
      this.c = c;
      this.d = d;
      this.e = e;
      this.expireAt = expireAt;
    }

    BucketState state() {
      return switch (kind) {
        case TOKEN_UNDER -> new TokenBucketState(Status.UNDER_LIMIT, a, b, c, d, expireAt);
        case TOKEN_OVER -> new TokenBucketState(Status.OVER_LIMIT, a, b, c, d, expireAt);
        case LEAKY -> new LeakyBucketState(a, b, c, d, e, expireAt);
        case FIXED -> new FixedWindowState(a, b, c, d, expireAt);
        default -> new SlidingWindowState(a, b, c, d, e, expireAt);
      };
    }
  }

  /**
   * A linear-probing table of at most {@code capacity} entries with its clock hand, sweep cursor
   * and counters, all guarded by its monitor except {@link #size}, which readers see unlocked.
   *
   * <p>Each slot's hash is kept in {@link #hashes}, beside {@link #table}, so a probe compares
   * hashes in one array and dereferences only the entry whose hash matches: with linear probing a
   * lookup passes over other keys' slots, and each of those entries would otherwise be a cache
   * miss.
   */
  private static final class Segment {
    private static final int INITIAL_TABLE = 16;

    private final int capacity;
    private Entry[] table = new Entry[INITIAL_TABLE];
    private int[] hashes = new int[INITIAL_TABLE];
    private volatile int size;
    private int hand;
    private int sweeper;
    private long hits;
    private long misses;
    private long evictions;

    Segment(int capacity) {
      this.capacity = capacity;
    }

    synchronized RateLimitResponse update(
        String key, int hash, long at, Function<BucketState, Decision> update, long now) {
      int i = indexOf(key, hash);
      Entry entry = i < 0 ? null : table[i];
      BucketState live = entry != null && entry.liveAt(at) ? entry.state() : null;
      if (live == null) {
        misses++;
      } else {
        hits++;
      }
      Decision decision = update.apply(live);
      BucketState next = decision.next();
      if (entry == null) {
        if (next != null) {
          insert(key, hash, next, now);
        }
      } else if (next == null) {
        removeAt(i);
      } else {
        entry.write(next);
        if (!entry.referenced) {
          entry.referenced = true;
        }
      }
      return decision.response();
    }

    synchronized BucketState get(String key, int hash, long now) {
      int i = indexOf(key, hash);
      if (i < 0 || !table[i].liveAt(now)) {
        misses++;
        return null;
      }
      hits++;
      Entry entry = table[i];
      entry.referenced = true;
      return entry.state();
    }

    synchronized void put(String key, int hash, BucketState state, long now) {
      int i = indexOf(key, hash);
      if (now >= state.expireAt()) {
        if (i >= 0) {
          removeAt(i);
        }
      } else if (i >= 0) {
        table[i].write(state);
      } else {
        insert(key, hash, state, now);
      }
    }

    synchronized boolean hasRoomFor(String key, int hash) {
      return size < capacity || indexOf(key, hash) >= 0;
    }

    synchronized void remove(String key, int hash) {
      int i = indexOf(key, hash);
      if (i >= 0) {
        removeAt(i);
      }
    }

    // Removes the key only while its state is live and equals expected; an expired state counts as
    // changed.
    synchronized boolean removeIfLive(String key, int hash, BucketState expected, long now) {
      int i = indexOf(key, hash);
      if (i < 0 || !table[i].liveAt(now) || !table[i].state().equals(expected)) {
        return false;
      }
      removeAt(i);
      return true;
    }

    synchronized Object[] live(long now) {
      Object[] out = new Object[2 * size];
      int n = 0;
      for (Entry entry : table) {
        if (entry != null && entry.liveAt(now)) {
          out[n++] = entry.key;
          out[n++] = entry.state();
        }
      }
      return n == out.length ? out : java.util.Arrays.copyOf(out, n);
    }

    synchronized void removeExpired(long now) {
      int i = 0;
      while (i < table.length) {
        Entry entry = table[i];
        if (entry != null && !entry.liveAt(now)) {
          removeAt(i);
        } else {
          i++;
        }
      }
    }

    synchronized long hits() {
      return hits;
    }

    synchronized long misses() {
      return misses;
    }

    synchronized long evictions() {
      return evictions;
    }

    private int indexOf(String key, int hash) {
      Entry[] t = table;
      int[] h = hashes;
      int mask = t.length - 1;
      for (int i = hash & mask; ; i = (i + 1) & mask) {
        Entry entry = t[i];
        if (entry == null) {
          return -1;
        }
        if (h[i] == hash && (entry.key == key || entry.key.equals(key))) {
          return i;
        }
      }
    }

    private void insert(String key, int hash, BucketState state, long now) {
      if (capacity == 0) {
        return;
      }
      sweep(now);
      while (size >= capacity) {
        evictOne(now);
      }
      if ((size + 1) * 4L > table.length * 3L) {
        resize();
      }
      place(table, hashes, new Entry(key, state), hash);
      size++;
    }

    // Removes up to two expired entries at the sweep cursor, so expired buckets leave without size
    // pressure at the pace keys are created.
    private void sweep(long now) {
      for (int step = 0; step < 2 && size > 0; step++) {
        sweeper &= table.length - 1;
        Entry entry = table[sweeper];
        if (entry != null && !entry.liveAt(now)) {
          removeAt(sweeper);
        } else {
          sweeper++;
        }
      }
    }

    private void evictOne(long now) {
      int mask = table.length - 1;
      while (true) {
        hand &= mask;
        Entry entry = table[hand];
        if (entry != null) {
          if (!entry.liveAt(now)) {
            removeAt(hand);
            return;
          }
          if (!entry.referenced) {
            removeAt(hand);
            evictions++;
            return;
          }
          entry.referenced = false;
        }
        hand++;
      }
    }

    private void resize() {
      Entry[] old = table;
      int[] oldHashes = hashes;
      Entry[] grown = new Entry[old.length * 2];
      int[] grownHashes = new int[grown.length];
      for (int i = 0; i < old.length; i++) {
        if (old[i] != null) {
          place(grown, grownHashes, old[i], oldHashes[i]);
        }
      }
      table = grown;
      hashes = grownHashes;
      hand = 0;
      sweeper = 0;
    }

    private static void place(Entry[] t, int[] h, Entry entry, int hash) {
      int mask = t.length - 1;
      int i = hash & mask;
      while (t[i] != null) {
        i = (i + 1) & mask;
      }
      t[i] = entry;
      h[i] = hash;
    }

    // Knuth's deletion for linear probing: later entries of the probe run move back into the hole
    // unless their home slot lies cyclically after it.
    private void removeAt(int hole) {
      Entry[] t = table;
      int[] h = hashes;
      int mask = t.length - 1;
      t[hole] = null;
      size--;
      for (int j = (hole + 1) & mask; t[j] != null; j = (j + 1) & mask) {
        int home = h[j] & mask;
        boolean stays = hole <= j ? hole < home && home <= j : hole < home || home <= j;
        if (!stays) {
          t[hole] = t[j];
          h[hole] = h[j];
          t[j] = null;
          hole = j;
        }
      }
    }
  }
}
