package dev.weir.core.metrics;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.weir.core.http.HttpRoute;
import dev.weir.core.time.Clock;
import java.util.ArrayList;
import java.util.List;

/**
 * Wraps HTTP routes so that each request is recorded with its route path, status and latency. A
 * handler that throws before answering is recorded as 500, the status the router then sends.
 */
public final class HttpMetrics {

  private HttpMetrics() {}

  /** Returns {@code routes} with handlers that report to {@code metrics}, timed with {@code clock}. */
  public static List<HttpRoute> instrument(List<HttpRoute> routes, WeirMetrics metrics, Clock clock) {
    List<HttpRoute> instrumented = new ArrayList<>(routes.size());
    for (HttpRoute route : routes) {
      instrumented.add(route.withHandler(timed(route, metrics, clock)));
    }
    return instrumented;
  }

  private static HttpHandler timed(HttpRoute route, WeirMetrics metrics, Clock clock) {
    HttpHandler handler = route.handler();
    return (HttpExchange exchange) -> {
      long start = clock.monotonicNanos();
      try {
        handler.handle(exchange);
      } finally {
        int code = exchange.getResponseCode();
        int status = code == -1 ? 500 : code;
        metrics.httpRequest(route.path(), status, clock.monotonicNanos() - start);
      }
    };
  }
}
