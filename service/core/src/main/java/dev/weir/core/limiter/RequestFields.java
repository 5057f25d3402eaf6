package dev.weir.core.limiter;

import dev.weir.core.model.RateLimitRequest;
import java.util.Optional;

/**
 * The field checks every front door applies to an item before routing it, worded exactly as
 * Gubernator words them: an empty {@code unique_key} is reported first, then an empty name (which
 * Gubernator calls the namespace). Algorithm, limit, duration and Gregorian errors are the
 * engine's.
 */
public final class RequestFields {

  /** The error of an item whose {@code unique_key} is empty. */
  public static final String EMPTY_UNIQUE_KEY = "field 'unique_key' cannot be empty";

  /** The error of an item whose {@code name} is empty. */
  public static final String EMPTY_NAMESPACE = "field 'namespace' cannot be empty";

  private RequestFields() {}

  /** Returns the error of {@code request}'s first missing required field, or empty when none is. */
  public static Optional<String> missingField(RateLimitRequest request) {
    if (request.uniqueKey().isEmpty()) {
      return Optional.of(EMPTY_UNIQUE_KEY);
    }
    if (request.name().isEmpty()) {
      return Optional.of(EMPTY_NAMESPACE);
    }
    return Optional.empty();
  }
}
