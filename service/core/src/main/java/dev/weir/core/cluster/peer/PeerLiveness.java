package dev.weir.core.cluster.peer;

import dev.weir.core.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * What this node knows of each peer's liveness: a peer is up until it is found not answering, then
 * down until it is back.
 *
 * <p>Design: a peer goes down at once when a call fails conclusively ({@code UNAVAILABLE}: refused,
 * reset, or no working connection within the call's deadline) or when its channel reports a failed
 * connection; calls that time out over a working connection take it down after {@link
 * #FAILURES_TO_DOWN} consecutive calls without an answer (a hung process, a long pause), so one
 * slow call alone does not move its keys, except within {@link #PROBATION} of its coming back: a
 * peer that just returned (a cold JVM still taking its buckets back) goes down again at its first
 * unanswered call, whose items are then routed to the next owner instead of failing. A peer that
 * announced it is leaving is down as well. A down peer is back only when it answers a probe (which
 * a node answers only once it has joined) or announces its return, never by a timer nor by
 * answering some other call (a node still joining answers the copies it asked for). A successful
 * call or an answered probe clears an up peer's error and unanswered calls; a call the peer
 * answered with an error status is kept as its error until then and changes nothing else. An up
 * peer with unanswered calls is <em>unanswered</em> ({@link #unanswered()}): the prober probes it
 * until it answers, so its error does not outlive the fault when no other call goes to it. Peers
 * never heard of are up.
 * Listeners hear each change after the state changed, outside the lock, so a listener may read
 * {@link #down()} or call back into this class.
 */
public final class PeerLiveness implements PeerCallObserver {

  /**
   * How many consecutive calls over a working connection must go unanswered to take a peer down.
   */
  public static final int FAILURES_TO_DOWN = 3;

  /** How long after coming back a peer goes down again at its first unanswered call. */
  public static final Duration PROBATION = Duration.ofSeconds(10);

  /** The reason a peer that announced it is leaving is down. */
  public static final String LEFT = "announced it is leaving";

  /** Hears each peer going down or coming back. */
  public interface Listener {

    /** {@code peer} was found down; {@code reason} says how. */
    default void peerDown(String peer, String reason) {}

    /** {@code peer} answered again after being down for {@code downFor}. */
    default void peerUp(String peer, Duration downFor) {}

    /** A call to {@code peer}, which is up and stays up for now, went unanswered. */
    default void peerUnanswered(String peer) {}

    /**
     * {@code peer}, already down for another reason, announced it is leaving: its reason is now
     * {@link #LEFT}, and whatever a leave changes (it is unreached at once) must be done now.
     */
    default void peerLeft(String peer) {}

    /**
     * A call to {@code peer}, already down, failed: the failing call is about to be retried, so
     * whatever the peer going down changes must be in place now, even if another thread is still
     * telling the listeners about it.
     */
    default void stillDown(String peer) {}
  }

  /**
   * One peer's state as health reports it.
   *
   * @param peer the peer's advertised address
   * @param up whether it is up
   * @param error why it is down, or the last error of an up peer since its last success; empty when
   *     none
   * @param downFor how long it has been down; zero when up
   */
  public record PeerState(String peer, boolean up, String error, Duration downFor) {}

  private final Clock clock;
  private final Map<String, Entry> peers = new HashMap<>();
  private final Map<String, Long> cameBack = new HashMap<>();
  private final Map<String, Long> vouchedAt = new HashMap<>();
  private volatile Set<String> down = Set.of();
  private volatile Set<String> unanswered = Set.of();
  private final List<Listener> listeners = new CopyOnWriteArrayList<>();

  /** Creates the record, timing outages on {@code clock}. */
  public PeerLiveness(Clock clock) {
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  /** Returns the clock outages are timed on. */
  Clock clock() {
    return clock;
  }

  /** Registers {@code listener} for later changes, after those registered before. */
  public void addListener(Listener listener) {
    listeners.add(listener);
  }

  /** Clears the error and the unanswered calls of {@code peer} if it is up; a down peer stays down. */
  @Override
  public synchronized void answered(String peer) {
    Entry e = peers.get(peer);
    if (e != null && !e.down) {
      peers.remove(peer);
      publish();
    }
  }

  @Override
  public void probeAnswered(String peer) {
    back(peer);
  }

  /**
   * Brings {@code peer} back up (it answered a probe or announced its return) and clears its error;
   * of an up peer, clears the error and the unanswered calls.
   */
  public void back(String peer) {
    Duration downFor;
    synchronized (this) {
      Entry e = peers.remove(peer);
      if (e == null) {
        return;
      }
      publish();
      if (!e.down) {
        return;
      }
      long now = clock.monotonicNanos();
      downFor = Duration.ofNanos(now - e.downSince);
      cameBack.put(peer, now);
    }
    listeners.forEach(l -> l.peerUp(peer, downFor));
  }

  @Override
  public void notAnswering(String peer, String error, boolean conclusive) {
    boolean alreadyDown;
    boolean wentDown = false;
    synchronized (this) {
      Entry e = entry(peer);
      alreadyDown = e.down;
      if (!alreadyDown) {
        e.error = error;
        e.failures++;
        wentDown = conclusive || e.failures >= FAILURES_TO_DOWN || onProbation(peer);
        if (wentDown) {
          goDown(e);
        } else {
          publish();
        }
      }
    }
    if (alreadyDown) {
      listeners.forEach(l -> l.stillDown(peer));
    } else if (wentDown) {
      notifyDown(peer, error);
    } else {
      listeners.forEach(l -> l.peerUnanswered(peer));
    }
  }

  @Override
  public void answeredWithError(String peer, String error) {
    synchronized (this) {
      Entry e = entry(peer);
      if (!e.down) {
        e.error = error;
        e.failures = 0;
        publish();
      }
    }
  }

  @Override
  public void unreachable(String peer, String reason) {
    markDown(peer, reason, null);
  }

  /**
   * Takes {@code peer} down as {@link #unreachable(String, String)} does, unless it came back
   * ({@link #back}: it answered a probe or announced its return) strictly after {@code seenNanos}
   * (on this record's clock): its channel's failed attempt was read before that newer news of it,
   * and is stale. Returns {@code false} when the failure was ignored so, {@code true} otherwise.
   */
  @Override
  public boolean unreachable(String peer, String reason, long seenNanos) {
    return markDown(peer, reason, seenNanos);
  }

  /**
   * Takes {@code target} as left ({@link #left}) if it is down here: {@code through}, a member,
   * answered that {@code target} announced its leave there longer ago than its grace, a notice that
   * did not reach this node. A refusal of a relay sent ({@code sentNanos}, on this record's clock)
   * strictly before {@code target} last came back here or was last {@linkplain #vouched vouched for} is
   * ignored: it may have been made before the target's return, which that later news shows. A target
   * that answers this node again is kept up for the same reason.
   */
  @Override
  public void relayTargetLeft(String through, String target, long sentNanos) {
    synchronized (this) {
      if (!isDown(target) || answeredSince(target, sentNanos)) {
        return;
      }
    }
    left(target);
  }

  /**
   * Records that another peer reached {@code peer} just now (an indirect probe's verdict named a
   * voucher): a refusal naming it left of a relay sent before now is stale ({@link
   * #relayTargetLeft}), and a leave of it announced or refused after now is a new one ({@link
   * #left}), even while its reason here is still {@link #LEFT}.
   */
  public synchronized void vouched(String peer) {
    vouchedAt.put(peer, clock.monotonicNanos());
    Entry e = peers.get(peer);
    if (e != null && e.down) {
      e.vouchedSinceLeft = true;
    }
  }

  // Called under the lock: whether peer came back or was vouched for after sentNanos (a reading
  // equal to it is not after: a frozen or coarse clock must not hide every later refusal).
  private boolean answeredSince(String peer, long sentNanos) {
    Long back = cameBack.get(peer);
    Long vouched = vouchedAt.get(peer);
    return (back != null && back - sentNanos > 0) || (vouched != null && vouched - sentNanos > 0);
  }

  /**
   * Takes {@code peer}, which announced it is leaving, down until it answers again; of a peer
   * already down for another reason, or down as {@link #LEFT} and {@linkplain #vouched vouched for}
   * since (a leaver back across a cut that left again), makes {@link #LEFT} its reason and tells
   * the listeners ({@link Listener#peerLeft}).
   */
  public void left(String peer) {
    boolean wasDown;
    synchronized (this) {
      Entry e = entry(peer);
      wasDown = e.down;
      if (wasDown && LEFT.equals(e.error) && !e.vouchedSinceLeft) {
        return;
      }
      e.error = LEFT;
      e.vouchedSinceLeft = false;
      if (!wasDown) {
        goDown(e);
      }
    }
    if (wasDown) {
      listeners.forEach(l -> l.peerLeft(peer));
    } else {
      notifyDown(peer, LEFT);
    }
  }

  // seenNanos: when the failure was seen, or null for one that is current. Returns false when the
  // failure predates the peer's return and was ignored.
  private boolean markDown(String peer, String reason, Long seenNanos) {
    synchronized (this) {
      Long back = cameBack.get(peer);
      if (seenNanos != null && back != null && back - seenNanos > 0) {
        return false;
      }
      Entry e = entry(peer);
      if (e.down) {
        return true;
      }
      e.error = reason;
      goDown(e);
    }
    notifyDown(peer, reason);
    return true;
  }

  /** Forgets every peer not in {@code current}: a peer discovery dropped is up if it comes back. */
  public synchronized void retain(Collection<String> current) {
    Set<String> kept = new HashSet<>(current);
    cameBack.keySet().retainAll(kept);
    vouchedAt.keySet().retainAll(kept);
    if (peers.keySet().retainAll(kept)) {
      publish();
    }
  }

  /** Returns whether {@code peer} is down; reads a snapshot without locking. */
  public boolean isDown(String peer) {
    return down.contains(peer);
  }

  /** Returns the peers that are down, an immutable snapshot read without locking. */
  public Set<String> down() {
    return down;
  }

  /**
   * Returns the peers that are up with calls unanswered since their last success, an immutable
   * snapshot read without locking.
   */
  public Set<String> unanswered() {
    return unanswered;
  }

  /** Returns why {@code peer} is down, or empty when it is up. */
  public synchronized String downReason(String peer) {
    Entry e = peers.get(peer);
    return e != null && e.down ? e.error : "";
  }

  /** Returns the state of every peer that is down or has an error, by address. */
  public synchronized List<PeerState> troubled() {
    long now = clock.monotonicNanos();
    List<PeerState> out = new ArrayList<>();
    new TreeMap<>(peers)
        .forEach(
            (peer, e) ->
                out.add(
                    new PeerState(
                        peer,
                        !e.down,
                        e.error,
                        e.down ? Duration.ofNanos(now - e.downSince) : Duration.ZERO)));
    return out;
  }

  // Called under the lock.
  private boolean onProbation(String peer) {
    Long back = cameBack.get(peer);
    return back != null && clock.monotonicNanos() - back < PROBATION.toNanos();
  }

  private void goDown(Entry e) {
    e.down = true;
    e.downSince = clock.monotonicNanos();
    publish();
  }

  // Called under the lock after every change of a peer's down flag or unanswered calls.
  private void publish() {
    Set<String> outDown = new HashSet<>();
    Set<String> outUnanswered = new HashSet<>();
    peers.forEach(
        (peer, e) -> {
          if (e.down) {
            outDown.add(peer);
          } else if (e.failures > 0) {
            outUnanswered.add(peer);
          }
        });
    down = Set.copyOf(outDown);
    unanswered = Set.copyOf(outUnanswered);
  }

  private Entry entry(String peer) {
    return peers.computeIfAbsent(peer, p -> new Entry());
  }

  private void notifyDown(String peer, String reason) {
    listeners.forEach(l -> l.peerDown(peer, reason));
  }

  /** One peer's mutable state, guarded by the enclosing instance. */
  private static final class Entry {
    private boolean down;
    private int failures;
    private String error = "";
    private long downSince;
    private boolean vouchedSinceLeft;
  }
}
