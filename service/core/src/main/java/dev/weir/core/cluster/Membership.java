package dev.weir.core.cluster;

import dev.weir.core.cluster.ring.HashRing;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The current hash ring, replaced whole (one volatile write) each time the peer set changes. Readers
 * take {@link #ring()} once per decision, so a swap never tears a request; listeners hear of each
 * change with the ring before and after it.
 *
 * <p>The ring holds the peers discovery reports minus those that announced they are leaving (until
 * they announce they are back, or discovery stops reporting them). With static discovery this is what
 * lets a node's keys move to the next owner while it restarts and come back when it returns.
 */
public final class Membership implements Consumer<Set<String>> {

  /** Hears of a ring change. */
  @FunctionalInterface
  public interface RingListener {
    /** Called after the ring became {@code after}; {@code before} is the ring it replaced. */
    void ringChanged(HashRing before, HashRing after);
  }

  private static final Logger LOG = LoggerFactory.getLogger(Membership.class);

  private final List<RingListener> listeners = new CopyOnWriteArrayList<>();
  private volatile HashRing ring;
  private Set<String> discovered = Set.of();
  private final Set<String> departed = new HashSet<>();

  /** Starts with {@code initial}, usually an empty ring carrying the replica and hash settings. */
  public Membership(HashRing initial) {
    this.ring = initial;
  }

  /** Returns the current ring. */
  public HashRing ring() {
    return ring;
  }

  /** Registers {@code listener} for later changes. */
  public void addListener(RingListener listener) {
    listeners.add(listener);
  }

  /** Takes {@code peers} as the discovered set and rebuilds the ring if the result changed. */
  @Override
  public void accept(Set<String> peers) {
    synchronized (this) {
      discovered = Set.copyOf(peers);
      departed.retainAll(discovered);
    }
    rebuild();
  }

  /** Drops {@code address} from the ring until it announces it is back. */
  public void departed(String address) {
    synchronized (this) {
      departed.add(address);
    }
    rebuild();
  }

  /** Puts {@code address} back on the ring if discovery reports it. */
  public void returned(String address) {
    synchronized (this) {
      departed.remove(address);
    }
    rebuild();
  }

  private void rebuild() {
    HashRing before;
    HashRing after;
    synchronized (this) {
      TreeSet<String> members = new TreeSet<>(discovered);
      members.removeAll(departed);
      before = ring;
      if (before.peers().equals(List.copyOf(members))) {
        return;
      }
      after = before.withPeers(members);
      ring = after;
      notifyListeners(before, after);
    }
  }

  // Called under the lock so that listeners see changes in order.
  private void notifyListeners(HashRing before, HashRing after) {
    LOG.info("peers changed: {} -> {}", before.peers(), after.peers());
    for (RingListener l : listeners) {
      try {
        l.ringChanged(before, after);
      } catch (RuntimeException e) {
        LOG.warn("ring listener failed", e);
      }
    }
  }
}
