package dev.weir.server;

import dev.weir.core.health.HealthChecker;
import dev.weir.core.health.HealthReport;
import dev.weir.http.HttpAnswer;
import dev.weir.http.HttpRoute;

/**
 * The readiness probe, {@code GET /readyz}: 200 while the node can answer (joined the ring, not
 * draining, its descriptor config loaded), 503 otherwise, with every health component in a JSON
 * body. A peer's trouble is listed but never makes it 503, unlike Gubernator's {@code HealthCheck}.
 */
final class ReadinessRoute {

  /** The probe's path. */
  static final String PATH = "/readyz";

  private ReadinessRoute() {}

  /** Returns the probe route of {@code checker}, served even while the listener is saturated. */
  static HttpRoute of(HealthChecker checker) {
    return HttpRoute.probe(
        PATH,
        call -> {
          HealthReport report = checker.report();
          return HttpAnswer.json(report.ready() ? 200 : 503, json(report)).completed();
        });
  }

  /**
   * Returns {@code {"ready":...,"components":[{"name":...,"healthy":...,"gates_readiness":...,
   * "message":...},...]}}.
   */
  static String json(HealthReport report) {
    StringBuilder out =
        new StringBuilder("{\"ready\":").append(report.ready()).append(",\"components\":[");
    for (int i = 0; i < report.components().size(); i++) {
      HealthReport.Entry e = report.components().get(i);
      out.append(i == 0 ? "" : ",")
          .append("{\"name\":")
          .append(HttpAnswer.jsonString(e.name()))
          .append(",\"healthy\":")
          .append(e.health().healthy())
          .append(",\"gates_readiness\":")
          .append(e.gatesReadiness())
          .append(",\"message\":")
          .append(HttpAnswer.jsonString(e.health().message()))
          .append('}');
    }
    return out.append("]}").toString();
  }
}
