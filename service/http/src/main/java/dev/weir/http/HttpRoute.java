package dev.weir.http;

import java.util.Locale;
import java.util.Objects;

/**
 * One endpoint of the HTTP listener: requests with exactly this method and path go to the handler.
 * Components contribute routes (the Gubernator gateway, the Envoy JSON endpoint, metrics) and the
 * server mounts them all on one {@link HttpListener}.
 *
 * @param method the HTTP method, upper case, e.g. {@code POST}
 * @param path the exact request path, e.g. {@code /v1/GetRateLimits}; query strings are ignored
 * @param handler answers the request
 * @param servedWhenSaturated whether the listener still serves this route when it already answers
 *     as many requests as it may at once (instead of answering 503); only for cheap routes that
 *     call no peer, such as Kubernetes probes, so that an overloaded node is not restarted or taken
 *     out of service
 */
public record HttpRoute(
    String method, String path, HttpHandler handler, boolean servedWhenSaturated) {

  /** Creates a route, upper-casing {@code method}. */
  public HttpRoute {
    method = Objects.requireNonNull(method, "method").toUpperCase(Locale.ROOT);
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(handler, "handler");
    if (!path.startsWith("/")) {
      throw new IllegalArgumentException("path must start with '/': " + path);
    }
  }

  /** Creates a route that is refused with 503 while the listener is saturated. */
  public HttpRoute(String method, String path, HttpHandler handler) {
    this(method, path, handler, false);
  }

  /** Returns a {@code GET} route. */
  public static HttpRoute get(String path, HttpHandler handler) {
    return new HttpRoute("GET", path, handler);
  }

  /** Returns a {@code POST} route. */
  public static HttpRoute post(String path, HttpHandler handler) {
    return new HttpRoute("POST", path, handler);
  }

  /**
   * Returns a {@code GET} probe route: cheap, calling no peer, and {@linkplain
   * #servedWhenSaturated() served even while the listener is saturated}.
   */
  public static HttpRoute probe(String path, HttpHandler handler) {
    return new HttpRoute("GET", path, handler, true);
  }
}
