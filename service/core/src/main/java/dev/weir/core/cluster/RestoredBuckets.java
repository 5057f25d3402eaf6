package dev.weir.core.cluster;

import dev.weir.core.cluster.handoff.HandOff;
import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.FixedWindowState;
import dev.weir.core.engine.LeakyBucketState;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.engine.SlidingWindowState;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.store.BucketStore;
import dev.weir.core.time.Clock;
import dev.weir.proto.gubernator.BucketSnapshot;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.Set;

/**
 * The buckets one start restores from snapshot files into a store of bounded {@linkplain
 * BucketStore#capacity() capacity}, each through {@link HandOff#restore}: at most as many keys as
 * the store holds. A bucket of a new key that arrives when that many are kept replaces the lowest
 * ranked kept one if it ranks higher, and is dropped otherwise; the rank is the share of its limit
 * used, then the later expiry (the most consumed, then the most recent, survive).
 */
final class RestoredBuckets {

  private static final Comparator<Ranked> LOWEST_FIRST =
      Comparator.comparingDouble(Ranked::used).thenComparingLong(Ranked::expireAt);

  private final BucketStore store;
  private final HandOff handOff;
  private final Clock clock;
  private final long capacity;
  private final Set<String> kept = new HashSet<>();
  // The kept keys by rank, lowest first: made when the store is first full.
  private PriorityQueue<Ranked> lowest;
  private long live;

  /** Creates the restore of buckets into {@code store} through {@code handOff}. */
  RestoredBuckets(BucketStore store, HandOff handOff, Clock clock) {
    this.store = store;
    this.handOff = handOff;
    this.clock = clock;
    this.capacity = store.capacity();
  }

  /** Returns the most keys the store holds. */
  long capacity() {
    return capacity;
  }

  /** Returns how many more keys fit beside those kept. */
  long room() {
    return Math.max(0, capacity - kept.size());
  }

  /** Restores {@code bucket} when it is live and ranks among the buckets the store holds. */
  void offer(BucketSnapshot bucket) {
    long now = clock.wallMillis();
    Optional<BucketState> state = PeerProtos.fromSnapshot(bucket);
    if (state.isEmpty() || state.get().expireAt() <= now) {
      return;
    }
    String key = bucket.getKey();
    if (kept.contains(key)) {
      handOff.restore(bucket);
      return;
    }
    live++;
    Ranked offered = null;
    if (kept.size() >= capacity) {
      offered = new Ranked(key, used(state.get(), now), state.get().expireAt());
      Ranked low = lowest(now).peek();
      if (low == null || LOWEST_FIRST.compare(offered, low) <= 0) {
        return;
      }
      lowest.poll();
      kept.remove(low.key());
      store.remove(low.key());
      handOff.forgetRestored(List.of(low.key()));
    }
    if (handOff.restore(bucket)) {
      kept.add(key);
      if (lowest != null) {
        lowest.add(offered);
      }
    }
  }

  // The kept keys by rank as the store holds them at now.
  private PriorityQueue<Ranked> lowest(long now) {
    if (lowest == null) {
      lowest = new PriorityQueue<>(LOWEST_FIRST);
      store.forEach(
          (key, state) -> {
            if (kept.contains(key)) {
              lowest.add(new Ranked(key, used(state, now), state.expireAt()));
            }
          });
    }
    return lowest;
  }

  /**
   * Returns the keys kept that the store still holds; those it evicted meanwhile (a segment of a
   * {@code ClockBucketStore} filled before the whole store) are no longer held for their owners.
   */
  Set<String> keys() {
    Set<String> held = new HashSet<>();
    store.forEach(
        (key, state) -> {
          if (kept.contains(key)) {
            held.add(key);
          }
        });
    if (held.size() < kept.size()) {
      List<String> evicted = new ArrayList<>();
      for (String key : kept) {
        if (!held.contains(key)) {
          evicted.add(key);
        }
      }
      handOff.forgetRestored(evicted);
    }
    return held;
  }

  /** Returns how many distinct live keys were offered. */
  long live() {
    return live;
  }

  // The share of its limit the state has used at now: the tokens taken, or the hits counted (a
  // sliding window's previous count weighted by the part of it still in the window).
  private static double used(BucketState state, long now) {
    if (state instanceof TokenBucketState t) {
      return share((double) t.limit() - t.remaining(), t.limit());
    }
    if (state instanceof LeakyBucketState l) {
      return share((double) l.burst() - RateLimitEngine.leakyBucketAvailable(l, now), l.burst());
    }
    if (state instanceof FixedWindowState f) {
      return share(f.count(), f.limit());
    }
    SlidingWindowState w = (SlidingWindowState) state;
    double left =
        w.duration() <= 0
            ? 0
            : Math.max(
                0, Math.min(1, (double) (w.windowStart() + w.duration() - now) / w.duration()));
    return share(w.previousCount() * left + w.currentCount(), w.limit());
  }

  private static double share(double used, long limit) {
    return limit <= 0 ? 1 : used / limit;
  }

  /** A kept key, the share of its limit used and its expiry. */
  private record Ranked(String key, double used, long expireAt) {}
}
