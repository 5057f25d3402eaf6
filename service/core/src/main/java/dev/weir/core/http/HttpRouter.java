package dev.weir.core.http;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import java.io.IOException;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Dispatches requests to {@link HttpRoute}s by exact path and method. An unknown path gets 404 and
 * a known path with another method 405 (with {@code Allow}), both as grpc-gateway error bodies; a
 * handler that throws gets 500 instead of a dropped connection.
 */
public final class HttpRouter implements HttpHandler {

  private static final Logger LOG = LoggerFactory.getLogger(HttpRouter.class);

  /** gRPC {@code NOT_FOUND}. */
  private static final int NOT_FOUND = 5;

  /** gRPC {@code UNIMPLEMENTED}, which grpc-gateway reports for a wrong method. */
  private static final int UNIMPLEMENTED = 12;

  /** gRPC {@code INTERNAL}. */
  private static final int INTERNAL = 13;

  private final Map<String, Map<String, HttpHandler>> byPath = new LinkedHashMap<>();
  private final Set<String> servedWhenSaturated = new HashSet<>();

  /**
   * Creates a router over {@code routes}; two routes with the same method and path are an error.
   */
  public HttpRouter(List<HttpRoute> routes) {
    for (HttpRoute route : routes) {
      HttpHandler previous =
          byPath
              .computeIfAbsent(route.path(), p -> new TreeMap<>())
              .put(route.method(), route.handler());
      if (previous != null) {
        throw new IllegalArgumentException(
            "duplicate route " + route.method() + " " + route.path());
      }
      if (route.servedWhenSaturated()) {
        servedWhenSaturated.add(route.method() + " " + route.path());
      }
    }
  }

  /**
   * Returns whether {@code exchange} is for a route {@linkplain HttpRoute#servedWhenSaturated()
   * served even while the listener is saturated}.
   */
  boolean servedWhenSaturated(HttpExchange exchange) {
    return servedWhenSaturated.contains(
        exchange.getRequestMethod() + " " + exchange.getRequestURI().getPath());
  }

  @Override
  public void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      Map<String, HttpHandler> methods = byPath.get(exchange.getRequestURI().getPath());
      if (methods == null) {
        HttpResponses.sendError(exchange, 404, NOT_FOUND, "Not Found");
        return;
      }
      HttpHandler handler = methods.get(exchange.getRequestMethod());
      if (handler == null) {
        exchange.getResponseHeaders().set("Allow", String.join(", ", methods.keySet()));
        HttpResponses.sendError(exchange, 405, UNIMPLEMENTED, "Method Not Allowed");
        return;
      }
      try {
        handler.handle(exchange);
      } catch (RuntimeException e) {
        LOG.error("HTTP handler for {} failed", exchange.getRequestURI().getPath(), e);
        if (exchange.getResponseCode() == -1) {
          HttpResponses.sendError(exchange, 500, INTERNAL, "internal error: " + e);
        }
      }
    }
  }
}
