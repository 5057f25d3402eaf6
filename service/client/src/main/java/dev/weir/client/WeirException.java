package dev.weir.client;

import io.grpc.Status;

/**
 * A failed call to a Weir (or Gubernator) node: the gRPC status code it ended with and the node it
 * was sent to. Subclasses name the codes callers usually handle apart.
 */
public class WeirException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final Status.Code code;
  private final String target;

  /** Creates the exception for a call to {@code target} that ended with {@code code}. */
  public WeirException(Status.Code code, String target, String message, Throwable cause) {
    super(message, cause);
    this.code = code;
    this.target = target;
  }

  /** Returns the gRPC status code the call ended with. */
  public Status.Code code() {
    return code;
  }

  /** Returns the address (or channel authority) the call was sent to. */
  public String target() {
    return target;
  }

  /**
   * Returns {@code failure} as a caller sees it: the cause of the {@link
   * java.util.concurrent.CompletionException} a dependent stage wraps it in, else itself.
   */
  static Throwable unwrapped(Throwable failure) {
    return failure instanceof java.util.concurrent.CompletionException wrapped
            && wrapped.getCause() != null
        ? wrapped.getCause()
        : failure;
  }

  /**
   * Returns the typed exception for {@code failure} of a call to {@code target}, its message naming
   * the target, the status and the first line of its cause's message (a refused connection's
   * address) unless that line is the status's description.
   */
  static WeirException of(Throwable failure, String target) {
    if (failure instanceof WeirException weir) {
      return weir;
    }
    Status status = Status.fromThrowable(failure);
    String description = status.getDescription();
    String cause = causeLine(status.getCause());
    String message =
        "call to "
            + target
            + " failed with "
            + status.getCode()
            + (description == null ? "" : ": " + description)
            + (cause == null || cause.equals(description) ? "" : " (" + cause + ")");
    return switch (status.getCode()) {
      case UNAVAILABLE -> new WeirUnavailableException(target, message, failure);
      case DEADLINE_EXCEEDED -> new WeirDeadlineExceededException(target, message, failure);
      case INVALID_ARGUMENT, OUT_OF_RANGE ->
          new WeirInvalidRequestException(status.getCode(), target, message, failure);
      default -> new WeirException(status.getCode(), target, message, failure);
    };
  }

  /** Returns the first line of {@code cause}'s message, or null when that is missing or blank. */
  private static String causeLine(Throwable cause) {
    if (cause == null || cause.getMessage() == null) {
      return null;
    }
    String first = cause.getMessage().lines().findFirst().orElse("").strip();
    return first.isEmpty() ? null : first;
  }
}
