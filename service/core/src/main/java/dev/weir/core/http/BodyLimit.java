package dev.weir.core.http;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.metrics.WeirMetrics;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;

/**
 * Caps the request body of {@code POST} routes: a body over the limit (by {@code Content-Length}
 * or as read) is answered 413 with gRPC code {@code RESOURCE_EXHAUSTED} and counted; a body within
 * it is read once and handed to the route as a fresh stream.
 */
public final class BodyLimit {

  /** gRPC {@code RESOURCE_EXHAUSTED}. */
  private static final int RESOURCE_EXHAUSTED = 8;

  private BodyLimit() {}

  /** Returns {@code routes} with every POST route refusing bodies over {@code maxBytes}. */
  public static List<HttpRoute> apply(List<HttpRoute> routes, int maxBytes, WeirMetrics metrics) {
    List<HttpRoute> limited = new ArrayList<>(routes.size());
    for (HttpRoute route : routes) {
      limited.add(
          route.method().equals("POST")
              ? route.withHandler(capped(route.handler(), maxBytes, metrics))
              : route);
    }
    return limited;
  }

  private static HttpHandler capped(HttpHandler handler, int maxBytes, WeirMetrics metrics) {
    return (HttpExchange exchange) -> {
      byte[] body = null;
      if (declaredLength(exchange) <= maxBytes) {
        try (InputStream in = exchange.getRequestBody()) {
          body = in.readNBytes(maxBytes + 1);
        }
      }
      if (body == null || body.length > maxBytes) {
        metrics.refused(RefusalReason.HTTP_BODY_TOO_LARGE);
        exchange.getResponseHeaders().set("Connection", "close");
        HttpResponses.sendError(
            exchange,
            413,
            RESOURCE_EXHAUSTED,
            "request body is larger than the "
                + maxBytes
                + " bytes allowed (WEIR_HTTP_MAX_BODY_SIZE)");
        return;
      }
      exchange.setStreams(new ByteArrayInputStream(body), null);
      handler.handle(exchange);
    };
  }

  private static long declaredLength(HttpExchange exchange) {
    String header = exchange.getRequestHeaders().getFirst("Content-Length");
    if (header == null) {
      return -1;
    }
    try {
      return Long.parseLong(header.trim());
    } catch (NumberFormatException e) {
      return -1;
    }
  }
}
