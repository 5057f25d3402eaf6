package dev.weir.core.limiter;

/** A call carried more items than one call may; adapters map it to gRPC {@code OUT_OF_RANGE}. */
public final class RequestTooLargeException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with the message clients see. */
  public RequestTooLargeException(String message) {
    super(message);
  }
}
