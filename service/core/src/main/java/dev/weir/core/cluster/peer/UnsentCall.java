package dev.weir.core.cluster.peer;

/**
 * The failure of a call to a peer that ended before any stream of it was made on a connection to
 * that peer, so that the peer certainly received nothing of it: a call cancelled, or past its
 * deadline, while it still waited for the connection. Its cause is gRPC's error, so the call's
 * status is unchanged.
 */
public final class UnsentCall extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Creates the failure of a call to {@code address} that gRPC failed with {@code error}. */
  public UnsentCall(String address, Throwable error) {
    super("call to peer '" + address + "' failed before it was sent: " + error.getMessage(), error);
  }

  /** Returns whether {@code error}'s cause chain holds an {@link UnsentCall}. */
  public static boolean in(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof UnsentCall) {
        return true;
      }
    }
    return false;
  }
}
