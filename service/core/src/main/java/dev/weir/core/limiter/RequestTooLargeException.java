package dev.weir.core.limiter;

/** A call carried more items than one call may; adapters map it to gRPC {@code OUT_OF_RANGE}. */
public final class RequestTooLargeException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * The message of a call with more than {@link RateLimitService#MAX_BATCH_SIZE} items, as
   * Gubernator words it.
   */
  public static final String OVER_BATCH_SIZE_MESSAGE =
      "Requests.RateLimits list too large; max size is '" + RateLimitService.MAX_BATCH_SIZE + "'";

  /** Creates the exception with the message clients see. */
  public RequestTooLargeException(String message) {
    super(message);
  }

  /** Returns the exception of a call over {@link RateLimitService#MAX_BATCH_SIZE} items. */
  public static RequestTooLargeException overBatchSize() {
    return new RequestTooLargeException(OVER_BATCH_SIZE_MESSAGE);
  }
}
