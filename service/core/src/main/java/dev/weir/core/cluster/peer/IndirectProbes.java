package dev.weir.core.cluster.peer;

import dev.weir.core.time.Scheduler;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether the peers this node does not reach are reached by another peer: the indirect probes of
 * SWIM (as Gubernator's memberlist does), which tell a peer cut off from this node alone from one
 * that is down.
 *
 * <p>Design: when {@link PeerLiveness} finds a peer down, up to {@link #CHECKERS} other members
 * this node reaches (the peer's last voucher first, then in address order) are asked to probe it
 * ({@link PeerClient#relay} with no requests). The first that reaches it becomes its
 * <em>voucher</em>: the peer stays on this node's ring and the items this node owes it are relayed
 * through the voucher ({@link #via}). If none reaches it (or this node reaches no other member) it
 * is <em>unreached</em> and leaves the ring ({@link #unreached}), as it did before indirect probes.
 * Until the first round's verdict the peer stays on the ring and {@link #via} names the first
 * checker, so its items are relayed rather than failed. While the peer is down the round is
 * repeated every {@code interval}: an unreached peer that a checker reaches again returns to the
 * ring, and a vouched peer is unreached only after {@link #ROUNDS_TO_DROP} rounds in a row that
 * found no voucher (a flapping link between the voucher and the peer does not move its keys back
 * and forth). A relay the voucher refused unsent starts a round at once ({@link #settled(String,
 * String)}; at most one per peer and refusing voucher between two timed rounds), which can name a
 * new voucher but, finding none, is not counted unless the timed round came while it was in flight
 * (it then counts as that round). A peer that announced it is leaving is unreached at once, also when it was down
 * already (its voucher is dropped); its rounds run again once it is a member again (its departure
 * mark expired), so a leaver that came back while its return notice missed this node (across a
 * cut) is vouched for and returns to the ring. When the peer answers this
 * node again ({@link PeerLiveness.Listener#peerUp}) all of this is forgotten but its last voucher,
 * which the next time it is down is asked first and named by {@link #via} until that round's
 * verdict: calls go direct.
 * {@code changed} runs, outside the lock, each time the unreached set changed.
 */
public final class IndirectProbes implements PeerLiveness.Listener, AutoCloseable {

  /** How many other peers are asked, per round, whether they reach a peer this node does not. */
  public static final int CHECKERS = 3;

  /** How many rounds in a row must find no voucher before a vouched peer leaves the ring. */
  public static final int ROUNDS_TO_DROP = 2;

  private static final Logger LOG = LoggerFactory.getLogger(IndirectProbes.class);

  private final String self;
  private final PeerLiveness liveness;
  private final PeerClientPool pool;
  private final Supplier<? extends Collection<String>> members;
  private final Duration timeout;
  private final Runnable changed;
  private final Map<String, String> vouchers = new HashMap<>();
  private final Map<String, String> lastVouchers = new HashMap<>();
  private final Map<String, Integer> failedRounds = new HashMap<>();
  private final Map<String, CompletableFuture<Void>> checking = new HashMap<>();

  /** The peers whose round in flight was started by a refusal and is not counted (yet). */
  private final Set<String> uncounted = new HashSet<>();

  /** The peers whose round in flight has its count decided and is reaching its verdict. */
  private final Set<String> settling = new HashSet<>();

  /** The peers whose timed round came while their round in flight was {@link #settling}. */
  private final Set<String> timedDuringSettle = new HashSet<>();

  /**
   * The peers owed a counted round: their timed round came while an uncounted round that found no
   * voucher was settling, so the next round for them counts, whoever starts it.
   */
  private final Set<String> owedTimed = new HashSet<>();

  /**
   * The peers, each with the vouchers whose refusal started a round for it since the timer's last
   * round for it.
   */
  private final Map<String, Set<String>> refusedSinceTick = new HashMap<>();
  private volatile Set<String> unreached = Set.of();
  private final PeerRounds rounds;
  private boolean closed;

  /**
   * Creates the probes of node {@code self}: asks, through {@code pool}, other {@code members}
   * whether they reach the peers {@code liveness} finds down, every {@code interval} on {@code
   * scheduler}, each probe waiting up to {@code timeout}; runs {@code changed} when the unreached
   * peers changed.
   * Register it as a {@link PeerLiveness.Listener}.
   */
  public IndirectProbes(
      String self,
      PeerLiveness liveness,
      PeerClientPool pool,
      Supplier<? extends Collection<String>> members,
      Scheduler scheduler,
      Duration interval,
      Duration timeout,
      Runnable changed) {
    this.self = self;
    this.liveness = liveness;
    this.pool = pool;
    this.members = members;
    this.timeout = timeout;
    this.changed = changed;
    this.rounds = new PeerRounds(liveness::down, members, scheduler, interval, this::timedRound);
  }

  /** Returns the peers found down that no other peer reaches: those that leave the ring. */
  public Set<String> unreached() {
    return unreached;
  }

  /**
   * Returns the peer through which to send what this node owes {@code peer}, or null to call it
   * directly (it is up, or unreached): its voucher while that is up and a member, else, until a
   * round found it unreached, the first peer a round would ask (its last voucher if that is up).
   */
  public String via(String peer) {
    if (!liveness.isDown(peer)) {
      return null;
    }
    synchronized (this) {
      if (unreached.contains(peer)) {
        return null;
      }
      String voucher = vouchers.get(peer);
      if (voucher != null && !liveness.isDown(voucher) && members.get().contains(voucher)) {
        return voucher;
      }
      List<String> checkers = checkers(peer, voucher != null ? voucher : lastVouchers.get(peer));
      return checkers.isEmpty() ? null : checkers.get(0);
    }
  }

  /**
   * Returns a future that completes once the round for {@code peer} reached its verdict and the
   * ring was rebuilt after it: a call relayed on that round's behalf that failed waits for it, so
   * the caller routes it again on the ring the verdict made. The round is the one in flight; when
   * none is and the peer is down with no verdict yet (found down a moment ago: the liveness marks a
   * peer down before it tells this probe), one starts now.
   */
  public CompletableFuture<Void> settled(String peer) {
    return settled(peer, null);
  }

  /**
   * Returns a future that completes as {@link #settled(String)}'s does, where {@code refusedBy} (or
   * null) is a peer that just refused to relay to {@code peer} before sending anything on: when that
   * is {@code peer}'s voucher and no round is in flight, one starts now, so that a voucher that
   * stopped relaying (it lost its own link to {@code peer}, or is leaving) is replaced by the next
   * peer that reaches {@code peer} instead of failing every relay until the next interval's round.
   * At most one round per peer and refusing voucher starts so between two of the timer's rounds.
   */
  public CompletableFuture<Void> settled(String peer, String refusedBy) {
    boolean voucherRefused;
    synchronized (this) {
      CompletableFuture<Void> round = checking.get(peer);
      if (round != null) {
        return round;
      }
      String voucher = vouchers.get(peer);
      voucherRefused = voucher != null && voucher.equals(refusedBy);
      if (!liveness.isDown(peer)
          || unreached.contains(peer)
          || (voucher != null && !voucherRefused)
          || (voucherRefused
              && !refusedSinceTick.computeIfAbsent(peer, p -> new HashSet<>()).add(refusedBy))) {
        return CompletableFuture.completedFuture(null);
      }
    }
    check(peer, voucherRefused);
    synchronized (this) {
      CompletableFuture<Void> round = checking.get(peer);
      return round == null ? CompletableFuture.completedFuture(null) : round;
    }
  }

  /** Returns the peer vouching for {@code peer}, or null when none does. */
  public synchronized String voucher(String peer) {
    return vouchers.get(peer);
  }

  @Override
  public void peerDown(String peer, String reason) {
    try {
      if (PeerLiveness.LEFT.equals(reason)) {
        verdict(peer, null, true);
      } else {
        check(peer);
      }
    } finally {
      rounds.start();
    }
  }

  @Override
  public void peerLeft(String peer) {
    try {
      verdict(peer, null, true);
    } finally {
      rounds.start();
    }
  }

  @Override
  public void peerUp(String peer, Duration downFor) {
    boolean wasUnreached;
    synchronized (this) {
      vouchers.remove(peer);
      failedRounds.remove(peer);
      refusedSinceTick.remove(peer);
      owedTimed.remove(peer);
      if (!checking.containsKey(peer)) {
        uncounted.remove(peer);
      }
      wasUnreached = unreached.contains(peer);
      if (wasUnreached) {
        publish(peer, false);
      }
    }
    if (wasUnreached) {
      changed.run();
    }
  }

  /**
   * Forgets every peer not in {@code current}, and the vouchers that are not: one discovery dropped
   * starts afresh if it returns, and a peer it vouched for is relayed through the next round's.
   */
  public synchronized void retain(Collection<String> current) {
    vouchers.keySet().retainAll(current);
    vouchers.values().retainAll(current);
    lastVouchers.keySet().retainAll(current);
    failedRounds.keySet().retainAll(current);
    refusedSinceTick.keySet().retainAll(current);
    owedTimed.retainAll(current);
    Set<String> kept = new HashSet<>(unreached);
    if (kept.retainAll(current)) {
      unreached = Set.copyOf(kept);
    }
  }

  /** Stops probing. */
  @Override
  public void close() {
    synchronized (this) {
      closed = true;
    }
    rounds.close();
  }

  /** Runs one round for {@code peer} unless one is in flight. */
  private void check(String peer) {
    check(peer, false);
  }

  /**
   * Runs one of the timer's rounds for {@code peer}, or counts the round in flight as one: a round
   * a refusal started that is still in flight when the timer's comes takes its place.
   */
  private void timedRound(String peer) {
    synchronized (this) {
      refusedSinceTick.remove(peer);
      if (settling.contains(peer)) {
        timedDuringSettle.add(peer);
        return;
      }
      if (checking.containsKey(peer)) {
        uncounted.remove(peer);
        return;
      }
    }
    check(peer, false);
  }

  /**
   * Runs one round for {@code peer} unless one is in flight; an {@code extra} round (started by a
   * voucher's refusal, not by the timer) that finds no voucher is not counted towards {@link
   * #ROUNDS_TO_DROP} unless the timer's round came while it was in flight, so a burst of refusals
   * neither drops a vouched peer sooner than the timer's rounds would nor keeps it from being
   * dropped.
   */
  private void check(String peer, boolean extra) {
    List<String> checkers;
    CompletableFuture<Void> round = new CompletableFuture<>();
    synchronized (this) {
      if (closed || checking.containsKey(peer)) {
        return;
      }
      String voucher = vouchers.get(peer);
      checkers = checkers(peer, voucher != null ? voucher : lastVouchers.get(peer));
      checking.put(peer, round);
      if (!owedTimed.remove(peer) && extra) {
        uncounted.add(peer);
      }
    }
    if (checkers.isEmpty()) {
      settle(peer, null, round);
      return;
    }
    CompletableFuture<String> found = new CompletableFuture<>();
    AtomicInteger pending = new AtomicInteger(checkers.size());
    for (String checker : checkers) {
      pool.call(checker, c -> c.relay(peer, List.of(), timeout))
          .whenComplete(
              (ok, error) -> {
                if (error == null) {
                  found.complete(checker);
                } else if (pending.decrementAndGet() == 0) {
                  found.complete(null);
                }
              });
    }
    found.thenAccept(voucher -> settle(peer, voucher, round));
  }

  // A timed round that comes once this round's count is decided, when that round is not counted and
  // found no voucher, is owed: the next round for the peer counts, and one starts after this one.
  private void settle(String peer, String voucher, CompletableFuture<Void> round) {
    boolean counted;
    synchronized (this) {
      counted = !uncounted.remove(peer);
      settling.add(peer);
    }
    boolean owed;
    try {
      if (voucher != null || counted) {
        verdict(peer, voucher, false);
      }
    } finally {
      synchronized (this) {
        checking.remove(peer, round);
        settling.remove(peer);
        owed = timedDuringSettle.remove(peer) && voucher == null && !counted;
        if (owed) {
          owedTimed.add(peer);
        }
      }
      round.complete(null);
    }
    if (owed && liveness.isDown(peer)) {
      check(peer, false);
    }
  }

  // Called under the lock: the members this node reaches, other than peer, voucher first.
  private List<String> checkers(String peer, String voucher) {
    Set<String> down = liveness.down();
    TreeSet<String> others = new TreeSet<>(members.get());
    others.remove(self);
    others.remove(peer);
    others.removeAll(down);
    List<String> out = new ArrayList<>(CHECKERS);
    if (voucher != null && others.remove(voucher)) {
      out.add(voucher);
    }
    for (String other : others) {
      if (out.size() == CHECKERS) {
        break;
      }
      out.add(other);
    }
    return out;
  }

  private void verdict(String peer, String voucher, boolean atOnce) {
    if (voucher != null) {
      liveness.vouched(peer);
    }
    boolean unreachedChanged = false;
    String log = null;
    synchronized (this) {
      if (!liveness.isDown(peer)) {
        return;
      }
      if (voucher != null) {
        String before = vouchers.put(peer, voucher);
        lastVouchers.put(peer, voucher);
        failedRounds.remove(peer);
        if (unreached.contains(peer)) {
          publish(peer, false);
          unreachedChanged = true;
        }
        if (!voucher.equals(before)) {
          log = "peer " + peer + " does not answer this node but " + voucher
              + " reaches it: it stays on the ring and its items are relayed through " + voucher;
        }
      } else {
        int rounds = failedRounds.merge(peer, 1, Integer::sum);
        boolean vouched = vouchers.containsKey(peer);
        if (atOnce || !vouched || rounds >= ROUNDS_TO_DROP) {
          vouchers.remove(peer);
          if (!unreached.contains(peer)) {
            publish(peer, true);
            unreachedChanged = true;
            log = "no other peer reaches " + peer
                + ": its keys go to their next owner until it answers";
          }
        }
      }
    }
    if (log != null) {
      LOG.warn(log);
    }
    if (unreachedChanged) {
      changed.run();
    }
  }

  // Called under the lock.
  private void publish(String peer, boolean add) {
    Set<String> next = new HashSet<>(unreached);
    if (add) {
      next.add(peer);
    } else {
      next.remove(peer);
    }
    unreached = Set.copyOf(next);
  }
}
