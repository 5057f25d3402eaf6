package dev.weir.core.cluster.peer;

import dev.weir.core.time.Scheduler;
import java.time.Duration;
import java.util.Collection;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * Probes the peers that are down until they answer, so a peer that returns is back on the ring
 * within one interval instead of after gRPC's reconnect backoff (which grows to minutes).
 *
 * <p>Design: while some peer is down, every {@code interval} each down peer that is a member
 * (discovered and not departed: a peer that announced it is leaving is probed only once its
 * departure mark expired) gets one {@link PeerClient#probe} with deadline {@code timeout}, unless
 * its last probe is still in flight. A probe's outcome reaches {@link PeerLiveness} like any
 * call's, which brings the peer up. The timer runs only while some peer is down.
 */
public final class PeerProber implements PeerLiveness.Listener, AutoCloseable {

  /** How often a peer that is down is probed. */
  public static final Duration INTERVAL = Duration.ofMillis(500);

  private final PeerClientPool pool;
  private final Duration timeout;
  private final Set<String> inFlight = ConcurrentHashMap.newKeySet();
  private final DownPeerRounds rounds;

  /**
   * Creates the prober of {@code liveness}'s down peers among {@code members}, through {@code
   * pool}'s clients, every {@code interval} on {@code scheduler}, each probe waiting up to {@code
   * timeout}. Register it as a {@link PeerLiveness.Listener}.
   */
  public PeerProber(
      PeerLiveness liveness,
      PeerClientPool pool,
      Supplier<? extends Collection<String>> members,
      Scheduler scheduler,
      Duration interval,
      Duration timeout) {
    this.pool = pool;
    this.timeout = timeout;
    this.rounds =
        new DownPeerRounds(
            liveness,
            members,
            scheduler,
            interval,
            peer -> {
              if (inFlight.add(peer)) {
                probe(peer);
              }
            });
  }

  @Override
  public void peerDown(String peer, String reason) {
    rounds.start();
  }

  /** Stops probing. */
  @Override
  public void close() {
    rounds.close();
  }

  private void probe(String peer) {
    try {
      pool.get(peer).probe(timeout).whenComplete((ok, error) -> inFlight.remove(peer));
    } catch (PeerException refused) { // shutting down, or the peer is no longer discovered
      inFlight.remove(peer);
    }
  }
}
