package dev.weir.core.cluster;

import dev.weir.core.time.Clock;
import dev.weir.core.time.Scheduler;
import dev.weir.ring.HashRing;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

/**
 * The current hash ring, replaced whole (one volatile write) each time the peer set changes. Readers
 * take {@link #ring()} once per decision, so a swap never tears a request; listeners hear of each
 * change with the ring before and after it, in order, but never under the membership's lock: a
 * listener may take its time (hand-off scans the store) or call back into the membership from any
 * thread. Changes are queued under the lock and delivered by one thread at a time; a thread that
 * finds another delivering leaves its change to that one. {@link MembersListener}s hear that the
 * {@linkplain #members() members} changed, also when the ring did not (discovery dropping a peer
 * already off the ring, down).
 *
 * <p>The ring holds the peers discovery reports minus those that announced they are leaving (until
 * they announce they are back, discovery stops reporting them, or the departure mark expires) and
 * minus those found down that no other peer reaches (until they answer again; see {@link
 * dev.weir.core.cluster.peer.PeerLiveness} and {@link dev.weir.core.cluster.peer.IndirectProbes}). With static discovery this is what lets a node's keys
 * move to the next owner while it restarts or is down and come back when it returns. A departure
 * mark of another peer expires {@code departedTtl} after it was set (measured on the injected
 * clock), so a peer whose return notice never arrived rejoins the ring by itself once it answers;
 * this node's own mark (set on shutdown) never expires. The {@linkplain #members() members} are the
 * discovered peers minus the departed ones, down or not: the peers this node keeps clients of and
 * reports in health.
 */
public final class Membership implements Consumer<Set<String>> {

  /** Hears of a ring change. */
  @FunctionalInterface
  public interface RingListener {
    /** Called after the ring became {@code after}; {@code before} is the ring it replaced. */
    void ringChanged(HashRing before, HashRing after);
  }

  /** Hears that the {@linkplain #members() members} changed. */
  @FunctionalInterface
  public interface MembersListener {
    /**
     * Called after the members changed (a peer discovered, dropped by discovery, departed or
     * returned, whether or not the ring changed with it), outside the membership's lock and
     * possibly on several threads at once: read {@link #members()} for the current set.
     */
    void membersChanged();
  }

  private static final Logger LOG = LoggerFactory.getLogger(Membership.class);

  private final List<RingListener> listeners = new CopyOnWriteArrayList<>();
  private final List<MembersListener> membersListeners = new CopyOnWriteArrayList<>();
  private final ArrayDeque<HashRing[]> undelivered = new ArrayDeque<>();
  private final ReentrantLock delivering = new ReentrantLock();
  private volatile HashRing ring;
  private Set<String> discovered = Set.of();
  private final Map<String, Long> departed = new HashMap<>();
  // Guarded by this: the members at the last rebuild.
  private Set<String> lastMembers = Set.of();
  private final String self;
  private final Clock clock;
  private final Scheduler scheduler;
  private final Duration departedTtl;
  private final Supplier<Set<String>> down;
  private final AtomicLong changes = new AtomicLong();
  // Guarded by this: how many changes the listeners have been told, and who waits for a count.
  private long told;
  private final List<Waiter> waiters = new ArrayList<>();
  private volatile Level changesLevel = Level.INFO;

  /**
   * Starts with {@code initial}, usually an empty ring carrying the replica and hash settings; a
   * departure mark lasts until the peer returns or discovery drops it.
   */
  public Membership(HashRing initial) {
    this(initial, null, null, null, null);
  }

  /**
   * Starts with {@code initial}; the departure mark of a peer other than {@code self} expires {@code
   * departedTtl} after it was set, timed on {@code clock} and {@code scheduler}.
   */
  public Membership(
      HashRing initial, String self, Clock clock, Scheduler scheduler, Duration departedTtl) {
    this(initial, self, clock, scheduler, departedTtl, Set::of);
  }

  /**
   * Starts as above; the ring also leaves out the peers in {@code down} (read at each rebuild,
   * never containing {@code self}): call {@link #refresh()} when it changes.
   */
  public Membership(
      HashRing initial,
      String self,
      Clock clock,
      Scheduler scheduler,
      Duration departedTtl,
      Supplier<Set<String>> down) {
    this.down = down;
    this.ring = initial;
    this.self = self;
    this.clock = clock;
    this.scheduler = scheduler;
    this.departedTtl = departedTtl;
  }

  /** Logs each change of the ring at {@code level} (INFO unless set). */
  public void logChangesAt(Level level) {
    this.changesLevel = level;
  }

  /** Returns the current ring. */
  public HashRing ring() {
    return ring;
  }

  /**
   * Returns the members: the discovered peers minus those that announced they are leaving, whether
   * they answer or not.
   */
  public synchronized Set<String> members() {
    TreeSet<String> members = new TreeSet<>(discovered);
    members.removeAll(departed.keySet());
    return members;
  }

  /** Returns the peers discovery reported last, departed or not. */
  public synchronized Set<String> discovered() {
    return discovered;
  }

  /** Returns how many times the ring changed since this membership was made. */
  public long changes() {
    return changes.get();
  }

  /** Rebuilds the ring from the current down peers; call it after they changed. */
  public void refresh() {
    rebuild();
  }

  /** Registers {@code listener} for later changes. */
  public void addListener(RingListener listener) {
    listeners.add(listener);
  }

  /** Registers {@code listener} for later changes of the members. */
  public void addMembersListener(MembersListener listener) {
    membersListeners.add(listener);
  }

  /** Takes {@code peers} as the discovered set and rebuilds the ring if the result changed. */
  @Override
  public void accept(Set<String> peers) {
    synchronized (this) {
      discovered = Set.copyOf(peers);
      departed.keySet().retainAll(discovered);
    }
    rebuild();
  }

  /** Drops {@code address} from the ring until it announces it is back or its mark expires. */
  public void departed(String address) {
    boolean expires = departedTtl != null && !address.equals(self);
    synchronized (this) {
      departed.put(address, expires ? clock.monotonicNanos() + departedTtl.toNanos() : Long.MAX_VALUE);
    }
    if (expires) {
      scheduler.schedule(this::expireDepartures, departedTtl);
    }
    rebuild();
  }

  /** Puts back on the ring every departed peer whose mark has expired. */
  public void expireDepartures() {
    synchronized (this) {
      long now = clock == null ? 0 : clock.monotonicNanos();
      departed.values().removeIf(until -> until != Long.MAX_VALUE && until - now <= 0);
    }
    rebuild();
  }

  /**
   * Returns the ring once {@code address} is back (its departure mark cleared, it answering and, if
   * discovery does not list it yet, listed), without changing anything: a joiner that Kubernetes
   * discovery lists only once it is ready, after its join, is on it.
   */
  public HashRing ringWithReturned(String address) {
    synchronized (this) {
      TreeSet<String> members = live();
      members.add(address);
      return ring.peers().equals(List.copyOf(members)) ? ring : ring.withPeers(members);
    }
  }

  /**
   * Clears {@code address}'s departure mark: it is back on the ring if discovery reports it and it
   * is not down.
   */
  public void returned(String address) {
    synchronized (this) {
      departed.remove(address);
    }
    rebuild();
  }

  private void rebuild() {
    boolean ringChanged;
    boolean membersChanged;
    synchronized (this) {
      Set<String> members = members();
      membersChanged = !members.equals(lastMembers);
      lastMembers = members;
      TreeSet<String> live = live();
      HashRing before = ring;
      ringChanged = !before.peers().equals(List.copyOf(live));
      if (ringChanged) {
        HashRing after = before.withPeers(live);
        ring = after;
        changes.incrementAndGet();
        undelivered.add(new HashRing[] {before, after});
      }
    }
    if (ringChanged) {
      deliver();
    }
    if (membersChanged) {
      notifyMembersListeners();
    }
  }

  private void notifyMembersListeners() {
    for (MembersListener l : membersListeners) {
      try {
        l.membersChanged();
      } catch (RuntimeException e) {
        LOG.warn("members listener failed", e);
      }
    }
  }

  /**
   * Tells the listeners of every queued change, in order, unless another thread is doing so (it
   * then delivers this thread's change too); checks again after letting go, so that no change is
   * left behind. A change made by a listener while it is being told (a peer call failing inline)
   * stays queued for the loop already running on this thread, so listeners hear changes in order.
   */
  private void deliver() {
    if (delivering.isHeldByCurrentThread()) {
      return;
    }
    while (delivering.tryLock()) {
      try {
        while (true) {
          HashRing[] change;
          synchronized (this) {
            change = undelivered.poll();
          }
          if (change == null) {
            break;
          }
          notifyListeners(change[0], change[1]);
          told();
        }
      } finally {
        delivering.unlock();
      }
      synchronized (this) {
        if (undelivered.isEmpty()) {
          return;
        }
      }
    }
  }

  /**
   * Returns a future that completes once the listeners have been told every change made so far:
   * at once, unless another thread is still telling them (this thread's change waits for it).
   */
  public CompletableFuture<Void> delivered() {
    synchronized (this) {
      long target = changes.get();
      if (told >= target) {
        return CompletableFuture.completedFuture(null);
      }
      Waiter waiter = new Waiter(target, new CompletableFuture<>());
      waiters.add(waiter);
      return waiter.done();
    }
  }

  // Counts one change told and completes the waiters it satisfies, outside the lock.
  private void told() {
    List<Waiter> ready = new ArrayList<>();
    synchronized (this) {
      told++;
      for (Iterator<Waiter> it = waiters.iterator(); it.hasNext(); ) {
        Waiter w = it.next();
        if (w.target() <= told) {
          ready.add(w);
          it.remove();
        }
      }
    }
    ready.forEach(w -> w.done().complete(null));
  }

  /** A wait for the listeners to have been told {@code target} changes. */
  private record Waiter(long target, CompletableFuture<Void> done) {}

  // Called under the lock: the discovered peers that are neither departed nor down.
  private TreeSet<String> live() {
    TreeSet<String> members = new TreeSet<>(discovered);
    members.removeAll(departed.keySet());
    members.removeAll(down.get());
    return members;
  }

  // Called by the delivering thread only, outside the membership's lock.
  private void notifyListeners(HashRing before, HashRing after) {
    LOG.atLevel(changesLevel).log("peers changed: {} -> {}", before.peers(), after.peers());
    for (RingListener l : listeners) {
      try {
        l.ringChanged(before, after);
      } catch (RuntimeException e) {
        LOG.warn("ring listener failed", e);
      }
    }
  }
}
