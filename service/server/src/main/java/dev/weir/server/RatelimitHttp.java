package dev.weir.server;

import com.sun.net.httpserver.HttpExchange;
import dev.weir.core.config.HostPort;
import dev.weir.core.health.NodeHealth;
import dev.weir.core.http.HttpListener;
import dev.weir.core.http.HttpResponses;
import dev.weir.core.http.HttpRoute;
import dev.weir.core.http.HttpSettings;
import dev.weir.core.limiter.HealthStatus;
import dev.weir.core.metrics.PrometheusEndpoint;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.envoy.config.ConfigDump;
import dev.weir.envoy.config.EnvoyConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The HTTP endpoints of envoyproxy/ratelimit that the compatibility mode adds: {@code GET
 * /healthcheck} on the HTTP port, and the debug and Prometheus listeners, each on the route
 * abstraction of the node's own listener.
 */
final class RatelimitHttp {

  /** The path of the health check, as Envoy Gateway's probes call it. */
  static final String HEALTHCHECK = "/healthcheck";

  /** The debug path that prints the loaded config. */
  static final String RLCONFIG = "/rlconfig";

  private static final String TEXT = "text/plain; charset=utf-8";

  /** Two workers: debug requests and scrapes are few. */
  private static final HttpSettings CAPACITY = HttpSettings.forThreads(2);

  private RatelimitHttp() {}

  /**
   * Returns {@code GET /healthcheck}, answered as the reference answers it: 200 {@code OK} while
   * {@code health} is healthy, else 500 with the reason (stopping, no config loaded with {@code
   * HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED}, peers not joined).
   */
  static HttpRoute healthcheck(NodeHealth health) {
    return HttpRoute.probe(
        HEALTHCHECK,
        exchange -> {
          HealthStatus status = health.health();
          if (status.healthy()) {
            text(exchange, 200, "OK");
          } else {
            text(exchange, 500, status.message());
          }
        });
  }

  /**
   * Starts the debug listener at {@code address}: {@code /rlconfig} prints the loaded config as the
   * reference prints it (see {@link ConfigDump}), {@code /} lists the endpoints.
   */
  static HttpListener debug(HostPort address, Supplier<Optional<EnvoyConfig>> config)
      throws IOException {
    List<HttpRoute> routes =
        List.of(
            HttpRoute.get(
                "/",
                exchange ->
                    text(exchange, 200, RLCONFIG + ": print out the currently loaded configuration")),
            HttpRoute.get(
                RLCONFIG,
                exchange -> text(exchange, 200, config.get().map(ConfigDump::of).orElse(""))));
    return HttpListener.start(address.toBindAddress(), routes, null, CAPACITY, WeirMetrics.NOOP);
  }

  /** Starts a listener at {@code address} that serves {@code registry}'s meters at {@code path}. */
  static HttpListener prometheus(HostPort address, String path, PrometheusMeterRegistry registry)
      throws IOException {
    HttpRoute scrape = new PrometheusEndpoint(registry).route();
    return HttpListener.start(
        address.toBindAddress(),
        List.of(HttpRoute.get(path, scrape.handler())),
        null,
        CAPACITY,
        WeirMetrics.NOOP);
  }

  private static void text(HttpExchange exchange, int status, String body) throws IOException {
    HttpResponses.send(exchange, status, TEXT, body.getBytes(StandardCharsets.UTF_8));
  }
}
