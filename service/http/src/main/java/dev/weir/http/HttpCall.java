package dev.weir.http;

import java.util.Objects;

/**
 * One HTTP request as a route sees it, read whole before its handler runs.
 *
 * @param method the HTTP method, upper case
 * @param path the decoded request path, without the query string
 * @param body the request body, empty when there is none; at most the listener's body limit
 * @param query the raw (still percent-encoded) query string without its {@code ?}, empty when there
 *     is none; {@link QueryParameters#parse} reads it
 */
public record HttpCall(String method, String path, byte[] body, String query) {

  /** Checks that no part is null. */
  public HttpCall {
    Objects.requireNonNull(method, "method");
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(body, "body");
    Objects.requireNonNull(query, "query");
  }

  /** Creates a call without a query string. */
  public HttpCall(String method, String path, byte[] body) {
    this(method, path, body, "");
  }
}
