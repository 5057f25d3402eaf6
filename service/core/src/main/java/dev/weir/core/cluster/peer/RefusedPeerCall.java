package dev.weir.core.cluster.peer;

/**
 * A peer's call that a {@link PeerHandler} refuses for what it asks, though well formed; {@link
 * PeersService} answers it {@code INVALID_ARGUMENT} with the message, which names the field, the
 * value and what is allowed.
 */
public final class RefusedPeerCall extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Creates the refusal that {@code message} explains. */
  public RefusedPeerCall(String message) {
    super(message, null, false, false);
  }
}
