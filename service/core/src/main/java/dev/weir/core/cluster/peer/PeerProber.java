package dev.weir.core.cluster.peer;

import dev.weir.core.time.Scheduler;
import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Probes the peers that are down until they answer, so a peer that returns is back on the ring
 * within one interval instead of after gRPC's reconnect backoff (which grows to minutes), and the
 * up peers with unanswered calls until they answer, so their error does not outlive a passing
 * fault when no other call goes to them.
 *
 * <p>Design: while some peer is down or unanswered ({@link PeerLiveness#unanswered()}), every
 * {@code interval} each such peer that is a member (discovered and not departed: a peer that
 * announced it is leaving is probed only once its departure mark expired) gets one probe with
 * deadline {@code timeout}, unless its last probe is still in flight to the peer's current client
 * (then the round only {@linkplain PeerClient#reconnectNow reconnects} that client now, so a probe
 * waiting for a connection reaches a peer that returned within one interval, whatever {@code
 * timeout}; a probe in flight to a client the pool replaced does not hold the next one back): a
 * down peer {@link PeerClient#probe}, whose outcome reaches {@link PeerLiveness} like any call's
 * and brings the peer up; an unanswered one {@link PeerClient#confirm}, whose answer clears its
 * error and whose failure counts for nothing (its calls alone take it down). The timer runs only
 * while some peer is down or unanswered.
 */
public final class PeerProber implements PeerLiveness.Listener, AutoCloseable {

  /** How often a peer that is down or unanswered is probed. */
  public static final Duration INTERVAL = Duration.ofMillis(500);

  private static final Logger LOG = LoggerFactory.getLogger(PeerProber.class);

  private final PeerLiveness liveness;
  private final PeerClientPool pool;
  private final Duration timeout;
  private final Map<String, PeerClient> inFlight = new ConcurrentHashMap<>();
  private final PeerRounds rounds;

  /**
   * Creates the prober of {@code liveness}'s down and unanswered peers among {@code members},
   * through {@code pool}'s clients, every {@code interval} on {@code scheduler}, each probe waiting
   * up to {@code timeout}. Register it as a {@link PeerLiveness.Listener}.
   */
  public PeerProber(
      PeerLiveness liveness,
      PeerClientPool pool,
      Supplier<? extends Collection<String>> members,
      Scheduler scheduler,
      Duration interval,
      Duration timeout) {
    this.liveness = liveness;
    this.pool = pool;
    this.timeout = timeout;
    this.rounds =
        new PeerRounds(
            () -> troubled(liveness),
            members,
            scheduler,
            interval,
            this::round);
  }

  @Override
  public void peerDown(String peer, String reason) {
    rounds.start();
  }

  @Override
  public void peerUnanswered(String peer) {
    rounds.start();
  }

  /** Stops probing. */
  @Override
  public void close() {
    rounds.close();
  }

  private static Set<String> troubled(PeerLiveness liveness) {
    Set<String> down = liveness.down();
    Set<String> unanswered = liveness.unanswered();
    if (unanswered.isEmpty()) {
      return down;
    }
    Set<String> both = new HashSet<>(down);
    both.addAll(unanswered);
    return both;
  }

  // A probe in flight to the peer's current client waits for a connection, which gRPC's backoff
  // would delay for seconds; one to a client the pool replaced never reaches the peer's new
  // address.
  private void round(String peer) {
    PeerClient current;
    try {
      current = pool.get(peer);
    } catch (PeerException refused) { // shutting down, or the peer is no longer discovered
      LOG.debug("peer '{}' not probed: {}", peer, refused.getMessage());
      return;
    } catch (RuntimeException notStarted) { // the next round probes again: the timer must go on
      LOG.warn("probe of peer '{}' could not start: {}", peer, notStarted.toString());
      return;
    }
    PeerClient probed = inFlight.putIfAbsent(peer, current);
    if (probed == null || (probed != current && inFlight.replace(peer, probed, current))) {
      probe(peer, current);
    } else if (probed == current) {
      reconnectNow(peer, current);
    }
  }

  private void reconnectNow(String peer, PeerClient client) {
    try {
      client.reconnectNow();
    } catch (RuntimeException notReconnected) { // the next round tries again
      LOG.warn("peer '{}' not reconnected: {}", peer, notReconnected.toString());
    }
  }

  private void probe(String peer, PeerClient client) {
    try {
      (liveness.isDown(peer) ? client.probe(timeout) : client.confirm(timeout))
          .whenComplete((ok, error) -> inFlight.remove(peer, client));
    } catch (PeerException refused) { // the client was closed
      inFlight.remove(peer, client);
    } catch (RuntimeException notStarted) { // the next round probes again: the timer must go on
      inFlight.remove(peer, client);
      LOG.warn("probe of peer '{}' could not start: {}", peer, notStarted.toString());
    }
  }
}
