package dev.weir.core.cluster;

import dev.weir.core.cluster.handoff.BucketMerge;
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
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * The live buckets one start restores from snapshot files into a store of bounded {@linkplain
 * BucketStore#capacity() capacity}: they are {@linkplain #offer offered} as the files are read and
 * {@linkplain #restore restored} at the end, ranked first, so that the store keeps the most
 * consumed. The rank is the share of its limit used, then the later expiry (the most consumed, then
 * the most recent, survive). Each key goes through {@link HandOff#restore} (every copy of it the
 * files hold, merged with its rule), best ranked first, as long as the store {@linkplain
 * BucketStore#hasRoomFor has room} for it: a store split into segments that evict on their own
 * (a {@code ClockBucketStore}) so keeps in each segment the best ranked of the keys that go to it,
 * and evicts none of them.
 *
 * <p>Until {@link #restore} it holds, for each {@linkplain BucketStore#partOf part} of the store,
 * at most the best ranked keys that part {@linkplain BucketStore#partCapacity holds}, so at most
 * the store's capacity in all however many the files hold: a key offered when its part's are all
 * better ranked is refused, and one that a better ranked key displaces is let go (both counted as
 * {@linkplain #dropped dropped}). The rank of a key while it is held is taken at the start's
 * clock when this was created, so that a later copy of a key let go ranks below the part's least
 * held too unless it is more consumed.
 */
final class RestoredBuckets {

  private static final Comparator<Ranked> HIGHEST_FIRST =
      Comparator.comparingDouble(Ranked::used)
          .thenComparingLong(Ranked::expireAt)
          .reversed()
          .thenComparing(Ranked::key);

  private final BucketStore store;
  private final HandOff handOff;
  private final Clock clock;
  private final long capacity;
  private final long fits;
  private final long rankedAt;
  private final Map<String, Offered> offered = new HashMap<>();
  private final Map<Integer, TreeSet<Ranked>> parts = new HashMap<>();
  private long live;
  private long dropped;

  /** Creates the restore of buckets into {@code store} through {@code handOff}. */
  RestoredBuckets(BucketStore store, HandOff handOff, Clock clock) {
    this.store = store;
    this.handOff = handOff;
    this.clock = clock;
    this.capacity = store.capacity();
    this.fits = mostHeldWithoutEviction(store, capacity);
    this.rankedAt = clock.wallMillis();
  }

  // The most keys the store holds at its capacity without a part evicting (capacityToHold).
  private static long mostHeldWithoutEviction(BucketStore store, long capacity) {
    if (store.capacityToHold(capacity) <= capacity) {
      return capacity;
    }
    long low = 0;
    long high = capacity;
    while (low < high) {
      long mid = low + (high - low + 1) / 2;
      if (store.capacityToHold(mid) <= capacity) {
        low = mid;
      } else {
        high = mid - 1;
      }
    }
    return low;
  }

  /** Returns the most keys the store holds. */
  long capacity() {
    return capacity;
  }

  /**
   * Returns how many more live keys fit beside those offered: the store holds them all without
   * evicting ({@link BucketStore#capacityToHold}).
   */
  long room() {
    return Math.max(0, fits - live());
  }

  /**
   * Holds {@code bucket} for {@link #restore} when it carries a state live now and its part of the
   * store has room for it among the best ranked, letting go the part's least ranked if need be.
   */
  void offer(BucketSnapshot bucket) {
    long now = clock.wallMillis();
    Optional<BucketState> state = PeerProtos.fromSnapshot(bucket);
    if (state.isEmpty() || state.get().expireAt() <= now) {
      return;
    }
    String key = bucket.getKey();
    Offered copies = offered.get(key);
    if (copies != null) {
      copies.buckets.add(bucket);
      copies.state = BucketMerge.moreConsumed(copies.state, state.get(), now);
      TreeSet<Ranked> part = parts.get(copies.part);
      part.remove(copies.rank);
      copies.rank = rank(key, copies.state, rankedAt);
      part.add(copies.rank);
      return;
    }
    live++;
    int index = store.partOf(key);
    TreeSet<Ranked> part = parts.computeIfAbsent(index, i -> new TreeSet<>(HIGHEST_FIRST));
    Ranked ranked = rank(key, state.get(), rankedAt);
    if (part.size() >= store.partCapacity(index)) {
      if (part.isEmpty() || HIGHEST_FIRST.compare(ranked, part.last()) > 0) {
        dropped++;
        return;
      }
      offered.remove(part.pollLast().key());
      dropped++;
    }
    copies = new Offered(index);
    copies.buckets.add(bucket);
    copies.state = state.get();
    copies.rank = ranked;
    offered.put(key, copies);
    part.add(ranked);
  }

  /** Returns how many distinct keys are held for {@link #restore}. */
  long held() {
    return offered.size();
  }

  /** Returns the keys held for {@link #restore}. */
  Set<String> heldKeys() {
    return Collections.unmodifiableSet(offered.keySet());
  }

  /**
   * Returns how many live keys were dropped for want of room: refused or let go while offered, or
   * refused by the store at the restore ({@link BucketStore#hasRoomFor}). A key whose copies
   * several files hold counts once for each copy refused.
   */
  long dropped() {
    return dropped;
  }

  /**
   * Returns how many live keys were offered: those held and those refused or let go while offered
   * (as {@link #dropped}, a key refused once for each of its copies).
   */
  long live() {
    return live;
  }

  /**
   * Restores the keys offered, best ranked first, each only while the store has room for it, and
   * returns those the store holds afterwards; a key restored but evicted meanwhile (by a write
   * of another thread) is no longer held for its owner.
   */
  Set<String> restore() {
    long now = clock.wallMillis();
    List<Ranked> ranked = new ArrayList<>(offered.size());
    offered.forEach((key, copies) -> ranked.add(rank(key, copies.state, now)));
    ranked.sort(HIGHEST_FIRST);
    parts.clear();
    Set<String> restored = new HashSet<>();
    for (Ranked r : ranked) {
      if (!store.hasRoomFor(r.key())) {
        dropped++;
        continue;
      }
      for (BucketSnapshot copy : offered.get(r.key()).buckets) {
        if (handOff.restore(copy)) {
          restored.add(r.key());
        }
      }
    }
    offered.clear();
    Set<String> held = new HashSet<>();
    store.forEach(
        (key, state) -> {
          if (restored.contains(key)) {
            held.add(key);
          }
        });
    if (held.size() < restored.size()) {
      List<String> evicted = new ArrayList<>();
      for (String key : restored) {
        if (!held.contains(key)) {
          evicted.add(key);
        }
      }
      handOff.forgetRestored(evicted);
    }
    return held;
  }

  private static Ranked rank(String key, BucketState state, long now) {
    return new Ranked(key, used(state, now), state.expireAt());
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

  /** The copies of one key the files hold, their merge, its rank and the part it goes to. */
  private static final class Offered {
    final List<BucketSnapshot> buckets = new ArrayList<>(1);
    final int part;
    BucketState state;
    Ranked rank;

    Offered(int part) {
      this.part = part;
    }
  }

  /** An offered key, the share of its limit used and its expiry. */
  private record Ranked(String key, double used, long expireAt) {}
}
