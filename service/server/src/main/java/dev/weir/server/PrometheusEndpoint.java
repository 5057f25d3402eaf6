package dev.weir.server;

import dev.weir.http.HttpAnswer;
import dev.weir.http.HttpCall;
import dev.weir.http.HttpRoute;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.concurrent.CompletionStage;

/**
 * {@code GET /metrics}: the node's meters in the Prometheus text exposition format (version 0.0.4),
 * for Prometheus to scrape on the HTTP port.
 */
public final class PrometheusEndpoint {

  /** The path Prometheus scrapes. */
  public static final String PATH = "/metrics";

  /** The content type of the text exposition format. */
  public static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

  private final PrometheusMeterRegistry registry;

  /** Creates the endpoint over {@code registry}. */
  public PrometheusEndpoint(PrometheusMeterRegistry registry) {
    this.registry = Objects.requireNonNull(registry, "registry");
  }

  /** Returns a new Prometheus registry with Micrometer's defaults. */
  public static PrometheusMeterRegistry newRegistry() {
    return new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  }

  /** Returns the route to mount on the HTTP listener. */
  public HttpRoute route() {
    return HttpRoute.get(PATH, this::scrape);
  }

  private CompletionStage<HttpAnswer> scrape(HttpCall call) {
    byte[] body = registry.scrape().getBytes(StandardCharsets.UTF_8);
    return HttpAnswer.of(200, CONTENT_TYPE, body).completed();
  }
}
