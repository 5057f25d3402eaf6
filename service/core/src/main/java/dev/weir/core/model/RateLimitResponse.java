package dev.weir.core.model;

import java.util.Map;

/**
 * The answer to one {@link RateLimitRequest}.
 *
 * @param status whether the hits were admitted
 * @param limit the request's limit, echoed
 * @param remaining tokens left after this request
 * @param resetTime epoch milliseconds at which the bucket is full again (token bucket: window end)
 * @param error a per-item error; when non-empty the other fields carry no meaning
 * @param metadata response metadata; {@code owner} names the owning peer when it is not this node
 */
public record RateLimitResponse(
    Status status,
    long limit,
    long remaining,
    long resetTime,
    String error,
    Map<String, String> metadata) {

  /** Creates a response, copying {@code metadata} unless it is an {@link ImmutableMetadata}. */
  public RateLimitResponse {
    error = error == null ? "" : error;
    if (metadata == null || metadata.isEmpty()) {
      metadata = Map.of();
    } else if (!(metadata instanceof ImmutableMetadata)) {
      metadata = Map.copyOf(metadata);
    }
  }

  /** Returns a successful response with no metadata. */
  public static RateLimitResponse of(Status status, long limit, long remaining, long resetTime) {
    return new RateLimitResponse(status, limit, remaining, resetTime, "", Map.of());
  }

  /** Returns an error response: status UNDER_LIMIT, numbers zero, {@code message} as the error. */
  public static RateLimitResponse error(String message) {
    return new RateLimitResponse(Status.UNDER_LIMIT, 0, 0, 0, message, Map.of());
  }

  /**
   * Returns the error answer to {@code request} when computing its answer threw {@code failure}:
   * {@code error while answering rate limit for '<hash key>': <failure's message>}.
   */
  public static RateLimitResponse answerFailed(RateLimitRequest request, Throwable failure) {
    return error(
        "error while answering rate limit for '"
            + request.hashKey()
            + "': "
            + failure.getMessage());
  }

  /** Returns whether this response carries a per-item error. */
  public boolean isError() {
    return !error.isEmpty();
  }

  /** Returns a copy with {@code metadata} replaced. */
  public RateLimitResponse withMetadata(Map<String, String> newMetadata) {
    return new RateLimitResponse(status, limit, remaining, resetTime, error, newMetadata);
  }
}
