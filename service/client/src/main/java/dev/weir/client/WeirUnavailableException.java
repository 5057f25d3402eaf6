package dev.weir.client;

import io.grpc.Status;

/**
 * A call that could not reach a node ({@code UNAVAILABLE}): the node is down, not listening yet, or
 * shutting down. The hits may or may not have been counted; retrying may count them twice.
 */
public final class WeirUnavailableException extends WeirException {

  private static final long serialVersionUID = 1L;

  /** Creates the exception for a call to {@code target}. */
  public WeirUnavailableException(String target, String message, Throwable cause) {
    super(Status.Code.UNAVAILABLE, target, message, cause);
  }
}
