package dev.weir.server;

import dev.weir.core.config.HostPort;
import dev.weir.core.health.HealthChecker;
import dev.weir.core.health.NodeHealth;
import dev.weir.gubernator.http.GatewayRoutes;
import dev.weir.http.HttpListener;
import dev.weir.http.HttpRoute;
import dev.weir.http.HttpSettings;
import dev.weir.tls.ClientAuth;
import dev.weir.tls.TlsIdentity;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The status listener, Gubernator's {@code GUBER_STATUS_HTTP_ADDRESS}: an extra HTTP listener that
 * serves only {@code GET /v1/HealthCheck}, {@code GET /v1/LiveCheck}, {@code GET /readyz}, {@code
 * GET /metrics} and {@code GET /v1/TopLimited}, for Kubernetes probes and Prometheus, which cannot present a client
 * certificate under mutual TLS. With TLS on it speaks HTTPS with the node's certificate but never
 * asks for a client certificate; without TLS it speaks plain HTTP. It never serves the rate-limit
 * API or {@code PeersV1}. It has its own threads, connection cap and deadlines, so probes are
 * answered while the HTTP port is saturated or held by slow clients.
 */
final class StatusListener implements AutoCloseable {

  /** The status listener's threads: probes and scrapes are few and quick. */
  static final int THREADS = 2;

  /** The most connections the status listener keeps open. */
  static final int MAX_CONNECTIONS = 256;

  private final HttpListener http;

  private StatusListener(HttpListener http) {
    this.http = http;
  }

  /**
   * Binds {@code address} (port 0 = any free port) and serves the probes of {@code health}, the
   * readiness probe of {@code readiness} and {@code registry}'s metrics, over HTTPS with {@code
   * tls}'s identity when it is not null, with the timeouts and body limit of {@code http} (the HTTP
   * listener's settings), and {@code more}: views that follow the metrics' access rule.
   */
  static StatusListener start(
      HostPort address,
      NodeHealth health,
      HealthChecker readiness,
      PrometheusMeterRegistry registry,
      TlsIdentity tls,
      HttpSettings http,
      List<HttpRoute> more)
      throws IOException, GeneralSecurityException {
    List<HttpRoute> routes = new ArrayList<>(GatewayRoutes.healthRoutes(health));
    routes.add(ReadinessRoute.of(readiness));
    routes.add(new PrometheusEndpoint(registry).route());
    routes.addAll(more);
    HttpListener.Builder listener =
        HttpListener.builder(address.toBindAddress())
            .routes(routes)
            .settings(http.withThreads(THREADS).withMaxConnections(MAX_CONNECTIONS))
            .threadName("status");
    if (tls != null) {
      listener.tls(tls.httpsEngines(ClientAuth.NONE));
    }
    return new StatusListener(listener.start());
  }

  /** Returns the bound port. */
  int port() {
    return http.port();
  }

  /**
   * Refuses new requests with 503, waits up to {@code grace} for those in flight, then closes the
   * listening socket.
   */
  void stop(Duration grace) {
    http.stop(grace);
  }

  /** Stops with one second of grace. */
  @Override
  public void close() {
    http.close();
  }
}
