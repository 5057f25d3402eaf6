package dev.weir.gubernator;

import dev.weir.core.limiter.RequestTooLargeException;
import dev.weir.core.logging.RateLimitedLogger;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;

/**
 * Maps a failed call to the gRPC status a client sees: too many items is {@code OUT_OF_RANGE} with
 * Gubernator's message, a status already chosen passes through, anything unexpected is {@code
 * INTERNAL} with a message (and is logged, at most once per exception type per 10 s).
 */
public final class GrpcErrors {

  /** Logs an unexpected failure once per exception type per interval, not once per call. */
  private static final RateLimitedLogger ERRORS = RateLimitedLogger.of(GrpcErrors.class);

  private GrpcErrors() {}

  /** Returns the status for {@code failure}, unwrapping future wrappers. */
  public static Status toStatus(Throwable failure) {
    Throwable cause = failure;
    while ((cause instanceof CompletionException || cause instanceof ExecutionException)
        && cause.getCause() != null) {
      cause = cause.getCause();
    }
    if (cause instanceof RequestTooLargeException) {
      return Status.OUT_OF_RANGE.withDescription(cause.getMessage());
    }
    if (cause instanceof StatusRuntimeException e) {
      return e.getStatus();
    }
    if (cause instanceof StatusException e) {
      return e.getStatus();
    }
    if (cause instanceof TimeoutException) {
      return Status.DEADLINE_EXCEEDED.withDescription("timed out: " + cause.getMessage());
    }
    ERRORS.error(cause.getClass().getName(), "unexpected failure answering a call", cause);
    return Status.INTERNAL.withDescription("internal error: " + cause).withCause(cause);
  }
}
