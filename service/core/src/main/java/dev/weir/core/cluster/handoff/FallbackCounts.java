package dev.weir.core.cluster.handoff;

import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.cluster.peer.UnsentRelay;
import dev.weir.core.engine.BucketState;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.store.BucketStore;
import dev.weir.core.time.Clock;
import dev.weir.ring.HashRing;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The keys this node counted for an owner it failed to hand them on to ({@link HandOn}'s fallback),
 * each remembered until its bucket here expires or that owner is reached, so that what this node
 * counted is then handed back to it: when the owner returns before this node took it off its ring,
 * no ring change hands those buckets back.
 *
 * <p>Design: keys are held by owner, so that reaching an owner with nothing remembered costs one
 * lookup and taking an owner's keys reads only those. At most {@link #LIMIT} keys are remembered
 * (once full, a new key is remembered only after an expired one is dropped); a key is remembered
 * for one owner at a time (the last that failed); a key whose hand-back failed is remembered again
 * once ({@link #MAX_SENDS}).
 */
public final class FallbackCounts {

  /** How many keys are remembered at most. */
  public static final int LIMIT = 100_000;

  /**
   * The least time between two scans of a full memory for expired keys, in milliseconds: a full
   * memory refuses new keys until then, so that a stream of them does not scan it once each.
   */
  static final long SCAN_INTERVAL_MILLIS = 1_000;

  /** How many times one remembered key is sent at most: once more after a failed transfer. */
  public static final int MAX_SENDS = 2;

  private final Clock clock;
  private final BucketStore store;
  // The remembered keys by owner; an owner with none has no entry. Changed only under this.
  private final ConcurrentHashMap<String, Map<String, Held>> byOwner = new ConcurrentHashMap<>();
  private final Map<String, String> ownerOf = new HashMap<>();
  // A wall millisecond before which no remembered key expires: until then a full memory stays full.
  private long fullUntil;

  /**
   * A remembered key's owner, the epoch millisecond at which its bucket here expires, and how many
   * times it was sent.
   */
  private record Held(String owner, long expireAt, int sends) {}

  /** The keys taken to be sent to their owners: {@link #keys()}, and what to remember again. */
  public static final class Taken {

    private final Map<String, Held> held;

    private Taken(Map<String, Held> held) {
      this.held = held;
    }

    /** Returns the keys taken. */
    public Set<String> keys() {
      return held.keySet();
    }

    /** Returns whether no key was taken. */
    public boolean isEmpty() {
      return held.isEmpty();
    }
  }

  /**
   * Creates the memory of keys counted in {@code store}, each forgotten once its bucket there
   * expires on {@code clock}.
   */
  public FallbackCounts(Clock clock, BucketStore store) {
    this.clock = clock;
    this.store = store;
  }

  /**
   * Remembers the keys of {@code items}, answered here with {@code answers} (in order) after their
   * hand-on to {@code owner} failed with {@code error}, when that failure shows the owner did not
   * get them ({@link PeerClientPool#likelyUndelivered}, or a relay not sent on, {@link
   * UnsentRelay#unsent}): after a deadline or another error the owner may have counted them, and
   * the bucket handed back would count them again. An item answered
   * with an error counted nothing, and a GLOBAL one was answered from this node's copy, whose hits
   * reach the owner with the GLOBAL sync.
   */
  public void counted(
      List<RateLimitRequest> items, List<RateLimitResponse> answers, String owner, Throwable error) {
    if (!PeerClientPool.likelyUndelivered(error) && !UnsentRelay.unsent(error)) {
      return;
    }
    long now = clock.wallMillis();
    synchronized (this) {
      for (int i = 0; i < items.size(); i++) {
        RateLimitRequest item = items.get(i);
        if (answers.get(i).error().isEmpty() && !item.has(Behavior.GLOBAL)) {
          long expireAt = store.get(item.hashKey()).map(BucketState::expireAt).orElse(0L);
          remember(item.hashKey(), new Held(owner, expireAt, 0), now);
        }
      }
    }
  }

  /** Returns whether a key is remembered for {@code owner}. */
  public boolean hasFor(String owner) {
    return byOwner.containsKey(owner);
  }

  /** Returns whether no key is remembered. */
  public boolean isEmpty() {
    return byOwner.isEmpty();
  }

  /**
   * Forgets the keys remembered for {@code owner} that {@code ring} still gives it, and returns
   * those live; the others stay remembered: they moved with a ring change, whose {@link
   * #takeMovedOn} sends them to their new owner.
   */
  public synchronized Taken takeFor(String owner, HashRing ring) {
    Map<String, Held> held = byOwner.remove(owner);
    Map<String, Held> taken = new HashMap<>();
    if (held == null) {
      return new Taken(taken);
    }
    long now = clock.wallMillis();
    Map<String, Held> moved = new HashMap<>();
    held.forEach(
        (key, h) -> {
          if (h.expireAt <= now) {
            ownerOf.remove(key);
          } else if (ownedBy(ring, key, owner)) {
            ownerOf.remove(key);
            taken.put(key, h);
          } else {
            moved.put(key, h);
          }
        });
    if (!moved.isEmpty()) {
      byOwner.put(owner, moved);
    }
    return new Taken(taken);
  }

  /**
   * Forgets the keys that {@code ring}, the ring after a change, does not give to the owner they
   * are remembered for, and returns those live that it gives to a node other than {@code self}, to
   * be sent to that node: the change's hand-off sends only the buckets this node owned before it.
   */
  public synchronized Taken takeMovedOn(HashRing ring, String self) {
    Map<String, Held> taken = new HashMap<>();
    long now = clock.wallMillis();
    for (Iterator<Map<String, Held>> owners = byOwner.values().iterator(); owners.hasNext(); ) {
      Map<String, Held> held = owners.next();
      for (Iterator<Map.Entry<String, Held>> it = held.entrySet().iterator(); it.hasNext(); ) {
        Map.Entry<String, Held> e = it.next();
        String key = e.getKey();
        Held h = e.getValue();
        if (ownedBy(ring, key, h.owner)) {
          continue;
        }
        it.remove();
        ownerOf.remove(key);
        String to = ring.isEmpty() ? self : ring.ownerOf(key);
        if (h.expireAt > now && !to.equals(self)) {
          taken.put(key, new Held(to, h.expireAt, h.sends));
        }
      }
      if (held.isEmpty()) {
        owners.remove();
      }
    }
    return new Taken(taken);
  }

  /**
   * Remembers again, for the owner it was sent to, each of {@code failed} among the keys {@code
   * taken} whose transfer failed, so that it is sent the next time that owner is reached, unless it
   * was sent {@link #MAX_SENDS} times, expired, or was remembered again meanwhile; returns how
   * many of {@code failed} are not remembered (their counts are lost to the owner).
   */
  public synchronized int sendFailed(Taken taken, Collection<String> failed) {
    long now = clock.wallMillis();
    int lost = 0;
    for (String key : failed) {
      Held h = taken.held.get(key);
      if (h == null || ownerOf.containsKey(key)) {
        continue;
      }
      int sends = h.sends + 1;
      if (sends >= MAX_SENDS || !remember(key, new Held(h.owner, h.expireAt, sends), now)) {
        lost++;
      }
    }
    return lost;
  }

  // Remembers key as held, replacing its entry for another owner; returns false when the bucket
  // expired or the memory is full of live keys.
  private boolean remember(String key, Held held, long now) {
    if (held.expireAt <= now) {
      return false;
    }
    String before = ownerOf.get(key);
    if (before == null && ownerOf.size() >= LIMIT && !dropExpired(now)) {
      return false;
    }
    if (before != null && !before.equals(held.owner)) {
      forget(key, before);
    }
    ownerOf.put(key, held.owner);
    byOwner.computeIfAbsent(held.owner, o -> new HashMap<>()).put(key, held);
    fullUntil = Math.min(fullUntil, held.expireAt);
    return true;
  }

  // Drops the expired keys once one may have expired since the memory was last full, at most once
  // per SCAN_INTERVAL_MILLIS; returns whether one was dropped.
  private boolean dropExpired(long now) {
    if (now < fullUntil) {
      return false;
    }
    long earliest = Long.MAX_VALUE;
    int before = ownerOf.size();
    for (Iterator<Map<String, Held>> owners = byOwner.values().iterator(); owners.hasNext(); ) {
      Map<String, Held> held = owners.next();
      for (Iterator<Map.Entry<String, Held>> it = held.entrySet().iterator(); it.hasNext(); ) {
        Map.Entry<String, Held> e = it.next();
        if (e.getValue().expireAt <= now) {
          it.remove();
          ownerOf.remove(e.getKey());
        } else {
          earliest = Math.min(earliest, e.getValue().expireAt);
        }
      }
      if (held.isEmpty()) {
        owners.remove();
      }
    }
    fullUntil = Math.max(earliest, now + SCAN_INTERVAL_MILLIS);
    return ownerOf.size() < before;
  }

  private void forget(String key, String owner) {
    Map<String, Held> held = byOwner.get(owner);
    if (held != null) {
      held.remove(key);
      if (held.isEmpty()) {
        byOwner.remove(owner);
      }
    }
    ownerOf.remove(key);
  }

  private static boolean ownedBy(HashRing ring, String key, String owner) {
    return !ring.isEmpty() && owner.equals(ring.ownerOf(key));
  }
}
