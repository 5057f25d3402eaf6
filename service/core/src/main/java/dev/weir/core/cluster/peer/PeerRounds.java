package dev.weir.core.cluster.peer;

import dev.weir.core.time.Scheduler;
import java.time.Duration;
import java.util.Collection;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A timer that, every {@code interval} while some peer is in trouble (by a chosen measure: down, or
 * down or unanswered), runs a round for each such peer that is still a member; it is armed by {@link
 * #start} and stops by itself when no peer is in trouble.
 */
final class PeerRounds implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(PeerRounds.class);

  private final Supplier<Set<String>> troubled;
  private final Supplier<? extends Collection<String>> members;
  private final Scheduler scheduler;
  private final Duration interval;
  private final Consumer<String> round;
  private boolean scheduled;
  private boolean closed;

  /**
   * Creates the timer of the {@code troubled} peers among {@code members}, running {@code round} for
   * each of them every {@code interval} on {@code scheduler}.
   */
  PeerRounds(
      Supplier<Set<String>> troubled,
      Supplier<? extends Collection<String>> members,
      Scheduler scheduler,
      Duration interval,
      Consumer<String> round) {
    this.troubled = troubled;
    this.members = members;
    this.scheduler = scheduler;
    this.interval = interval;
    this.round = round;
  }

  /** Arms the timer one interval from now, unless it is armed already or closed. */
  void start() {
    synchronized (this) {
      if (scheduled || closed) {
        return;
      }
      scheduled = true;
    }
    scheduler.schedule(this::tick, interval);
  }

  /** Stops the rounds. */
  @Override
  public synchronized void close() {
    closed = true;
  }

  private void tick() {
    Set<String> now;
    synchronized (this) {
      now = troubled.get();
      if (closed || now.isEmpty()) {
        scheduled = false;
        return;
      }
    }
    try {
      Collection<String> current = members.get();
      for (String peer : now) {
        if (current.contains(peer)) {
          runRound(peer);
        }
      }
    } finally {
      scheduler.schedule(this::tick, interval);
    }
  }

  // A round that fails is logged; the other peers' rounds and the next tick still run.
  private void runRound(String peer) {
    try {
      round.accept(peer);
    } catch (RuntimeException e) {
      LOG.warn("round for peer {} failed; the next one runs in {}", peer, interval, e);
    }
  }
}
