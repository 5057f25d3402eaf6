package dev.weir.client;

import io.grpc.Status;

/**
 * A call the node rejected as a whole ({@code INVALID_ARGUMENT} or {@code OUT_OF_RANGE}, for
 * example more than 1000 items). A single bad item is not rejected this way: its response carries
 * the reason in {@code error}.
 */
public final class WeirInvalidRequestException extends WeirException {

  private static final long serialVersionUID = 1L;

  /** Creates the exception for a call to {@code target} that ended with {@code code}. */
  public WeirInvalidRequestException(
      Status.Code code, String target, String message, Throwable cause) {
    super(code, target, message, cause);
  }
}
