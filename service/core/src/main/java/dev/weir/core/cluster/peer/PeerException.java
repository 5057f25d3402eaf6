package dev.weir.core.cluster.peer;

/** A call to a peer failed; the message names the peer and the gRPC status. */
public final class PeerException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String peer;

  /** Creates the exception for a failed call to {@code peer}. */
  public PeerException(String peer, String message, Throwable cause) {
    super(message, cause);
    this.peer = peer;
  }

  /** Returns the address of the peer the call went to. */
  public String peer() {
    return peer;
  }
}
