package dev.weir.client;

import io.grpc.Status;

/** A call that did not complete within the client's deadline ({@code DEADLINE_EXCEEDED}). */
public final class WeirDeadlineExceededException extends WeirException {

  private static final long serialVersionUID = 1L;

  /** Creates the exception for a call to {@code target}. */
  public WeirDeadlineExceededException(String target, String message, Throwable cause) {
    super(Status.Code.DEADLINE_EXCEEDED, target, message, cause);
  }
}
