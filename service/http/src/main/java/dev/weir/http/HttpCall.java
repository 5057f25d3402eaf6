package dev.weir.http;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * One HTTP request as a route sees it, read whole before its handler runs.
 *
 * @param method the HTTP method, upper case
 * @param path the decoded request path, without the query string
 * @param body the request body, empty when there is none; at most the listener's body limit
 * @param query the raw (still percent-encoded) query string without its {@code ?}, empty when there
 *     is none; {@link QueryParameters#parse} reads it
 * @param traceContext the request's W3C trace context headers by lower-case name ({@code
 *     traceparent}, and {@code tracestate} when sent with it, its non-blank headers joined by
 *     commas), empty when it carries no {@code traceparent} or more than one
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
   * Returns the W3C trace context of a request or call whose {@code traceparent} and {@code
   * tracestate} header values are given: empty without exactly one {@code traceparent} (W3C Trace
   * Context: a request with two starts a trace of its own), its non-blank {@code tracestate} values
   * joined by commas into one list, as the specification asks (an empty header is a valid one
   * carrying no member).
   */
  public static Map<String, String> traceContext(
      List<String> traceparents, List<String> tracestates) {
    if (traceparents.size() != 1) {
      return Map.of();
    }
    String traceparent = traceparents.get(0);
    String tracestate =
        tracestates.stream().filter(value -> !value.isBlank()).collect(Collectors.joining(","));
    return tracestate.isEmpty()
        ? Map.of(TRACEPARENT, traceparent)
        : Map.of(TRACEPARENT, traceparent, TRACESTATE, tracestate);
  }
}
