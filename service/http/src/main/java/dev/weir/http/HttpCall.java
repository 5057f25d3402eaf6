package dev.weir.http;

import java.util.Map;
import java.util.Objects;

/**
 * One HTTP request as a route sees it, read whole before its handler runs.
 *
 * @param method the HTTP method, upper case
 * @param path the decoded request path, without the query string
 * @param body the request body, empty when there is none; at most the listener's body limit
 * @param query the raw (still percent-encoded) query string without its {@code ?}, empty when there
 *     is none; {@link QueryParameters#parse} reads it
 * @param traceContext the request's W3C trace context headers by lower-case name ({@code
 *     traceparent}, and {@code tracestate} when sent with it, its headers joined by commas), empty
 *     when it carries no {@code traceparent} or more than one
 */
public record HttpCall(
    String method, String path, byte[] body, String query, Map<String, String> traceContext) {

  /** The W3C header naming the caller's trace and span. */
  public static final String TRACEPARENT = "traceparent";

  /** The W3C header carrying vendors' trace state along with {@link #TRACEPARENT}. */
  public static final String TRACESTATE = "tracestate";

  /** Checks that no part is null. */
  public HttpCall {
    Objects.requireNonNull(method, "method");
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(body, "body");
    Objects.requireNonNull(query, "query");
    Objects.requireNonNull(traceContext, "traceContext");
  }

  /** Creates a call without trace context. */
  public HttpCall(String method, String path, byte[] body, String query) {
    this(method, path, body, query, Map.of());
  }

  /** Creates a call without a query string or trace context. */
  public HttpCall(String method, String path, byte[] body) {
    this(method, path, body, "");
  }

  /**
   * Returns the trace context of a request whose {@code traceparent} and {@code tracestate} header
   * values are given (null when absent): empty without a {@code traceparent}.
   */
  public static Map<String, String> traceContext(String traceparent, String tracestate) {
    if (traceparent == null) {
      return Map.of();
    }
    return tracestate == null
        ? Map.of(TRACEPARENT, traceparent)
        : Map.of(TRACEPARENT, traceparent, TRACESTATE, tracestate);
  }
}
