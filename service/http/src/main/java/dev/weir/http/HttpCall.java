package dev.weir.http;

import java.util.Objects;

/**
 * One HTTP request as a route sees it, read whole before its handler runs.
 *
 * @param method the HTTP method, upper case
 * @param path the decoded request path, without the query string
 * @param body the request body, empty when there is none; at most the listener's body limit
 */
public record HttpCall(String method, String path, byte[] body) {

  /** Checks that no part is null. */
  public HttpCall {
    Objects.requireNonNull(method, "method");
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(body, "body");
  }
}
