package dev.weir.core.cluster.peer;

/**
 * Hears how the calls to a peer end and what its channel's connection does; a {@link PeerClient}
 * reports to one, {@link PeerLiveness} is the one that decides from it.
 */
public interface PeerCallObserver {

  /** An observer that ignores everything. */
  PeerCallObserver NONE = new PeerCallObserver() {};

  /** A call to {@code peer} succeeded. */
  default void answered(String peer) {}

  /** {@code peer} answered a probe: it serves as a cluster member. */
  default void probeAnswered(String peer) {}

  /**
   * A call to {@code peer} got no answer ({@code UNAVAILABLE} or {@code DEADLINE_EXCEEDED}), with
   * {@code error} naming the peer and the status; {@code conclusive} tells whether the failure
   * shows the peer cannot be reached now ({@code UNAVAILABLE}: the connection failed or broke, or
   * the peer refused; or no working connection at that moment) rather than that it was slow.
   */
  default void notAnswering(String peer, String error, boolean conclusive) {}

  /**
   * {@code peer} answered a call with an error status, {@code error} naming the peer and the
   * status.
   */
  default void answeredWithError(String peer, String error) {}

  /** The channel to {@code peer} failed to connect, {@code reason} saying so. */
  default void unreachable(String peer, String reason) {}

  /**
   * The channel to {@code peer} was seen failing to connect at {@code seenNanos} (the reporting
   * client's clock's monotonic reading, taken before the channel's state was read), {@code reason}
   * saying so: as {@link #unreachable(String, String)}, for an observer that can tell a sight that
   * predates a later return of the peer. Returns whether the sight was taken; {@code false} when it
   * was ignored as stale, in which case the reporter reads the channel's state again.
   */
  default boolean unreachable(String peer, String reason, long seenNanos) {
    unreachable(peer, reason);
    return true;
  }

  /**
   * {@code through} refused to relay a call to {@code target}, sent at {@code sentNanos} (the
   * reporting client's clock's monotonic reading), because {@code target} announced its leave there
   * longer ago than its grace ({@link UnsentRelay#TARGET_LEFT}).
   */
  default void relayTargetLeft(String through, String target, long sentNanos) {}
}
