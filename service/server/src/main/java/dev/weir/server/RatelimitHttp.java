package dev.weir.server;

import dev.weir.core.config.HostPort;
import dev.weir.core.health.HealthChecker;
import dev.weir.core.health.HealthReport;
import dev.weir.envoy.config.ConfigDump;
import dev.weir.envoy.config.EnvoyConfig;
import dev.weir.http.HttpAnswer;
import dev.weir.http.HttpListener;
import dev.weir.http.HttpRoute;
import dev.weir.http.HttpSettings;
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

  private RatelimitHttp() {}

  /**
   * Returns {@code GET /healthcheck}, answered as the reference answers it: 200 {@code OK} while
   * {@code health} is ready, else 500 naming the unhealthy components (draining, no config loaded
   * with {@code HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED}, not joined).
   */
  static HttpRoute healthcheck(HealthChecker health) {
    return HttpRoute.probe(
        HEALTHCHECK,
        call -> {
          HealthReport report = health.report();
          return (report.ready() ? text(200, "OK") : text(500, unready(report))).completed();
        });
  }

  private static String unready(HealthReport report) {
    StringBuilder out = new StringBuilder();
    for (HealthReport.Entry e : report.components()) {
      if (e.gatesReadiness() && !e.health().healthy()) {
        out.append(out.length() == 0 ? "" : "; ")
            .append(e.name())
            .append(": ")
            .append(e.health().message());
      }
    }
    return out.toString();
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
                call ->
                    text(200, RLCONFIG + ": print out the currently loaded configuration\n")
                        .completed()),
            HttpRoute.get(
                RLCONFIG,
                call -> text(200, config.get().map(ConfigDump::of).orElse("")).completed()));
    return start(address, routes, "debug");
  }

  /** Starts a listener at {@code address} that serves {@code registry}'s meters at {@code path}. */
  static HttpListener prometheus(HostPort address, String path, PrometheusMeterRegistry registry)
      throws IOException {
    HttpRoute scrape = new PrometheusEndpoint(registry).route();
    return start(address, List.of(HttpRoute.get(path, scrape.handler())), "prometheus");
  }

  private static HttpListener start(HostPort address, List<HttpRoute> routes, String name)
      throws IOException {
    return HttpListener.builder(address.toBindAddress())
        .routes(routes)
        .settings(HttpSettings.defaults())
        .threadName(name)
        .start();
  }

  private static HttpAnswer text(int status, String body) {
    return HttpAnswer.of(status, TEXT, body.getBytes(StandardCharsets.UTF_8));
  }
}
