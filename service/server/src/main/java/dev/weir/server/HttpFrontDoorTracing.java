package dev.weir.server;

import dev.weir.http.HttpAnswer;
import dev.weir.http.HttpCall;
import dev.weir.http.HttpRoute;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The tracing of the HTTP front doors ({@code POST /v1/GetRateLimits}, {@code POST /json}): a
 * server span per request named {@code POST <route>}, continuing the W3C {@code traceparent} of
 * its headers, current while the route's handler runs so that the config match and the forwards
 * become its children, and ended with the answer's status. Other routes (probes, metrics, the
 * status page) are not traced. Installed only when tracing is on.
 */
final class HttpFrontDoorTracing {

  /** The paths of the routes that decide rate limits, the ones traced. */
  static final Set<String> TRACED_PATHS = Set.of("/v1/GetRateLimits", "/json");

  private static final AttributeKey<String> METHOD =
      AttributeKey.stringKey("http.request.method");
  private static final AttributeKey<String> ROUTE = AttributeKey.stringKey("http.route");
  private static final AttributeKey<Long> STATUS =
      AttributeKey.longKey("http.response.status_code");

  private final Tracer tracer;

  HttpFrontDoorTracing(Tracer tracer) {
    this.tracer = tracer;
  }

  /** Returns {@code route} traced when it is a front door, else {@code route} itself. */
  HttpRoute trace(HttpRoute route) {
    if (!TRACED_PATHS.contains(route.path())) {
      return route;
    }
    return new HttpRoute(
        route.method(),
        route.path(),
        call -> handle(route, call),
        route.servedWhenSaturated());
  }

  private CompletionStage<HttpAnswer> handle(HttpRoute route, HttpCall call) {
    Context parent = TraceContexts.fromMap(call.traceContext());
    Span span =
        tracer
            .spanBuilder(route.method() + " " + route.path())
            .setParent(parent)
            .setSpanKind(SpanKind.SERVER)
            .setAttribute(METHOD, route.method())
            .setAttribute(ROUTE, route.path())
            .startSpan();
    CompletionStage<HttpAnswer> answer;
    try (Scope ignored = parent.with(span).makeCurrent()) {
      answer = route.handler().handle(call);
    } catch (RuntimeException e) {
      answer = CompletableFuture.failedFuture(e);
    }
    if (answer == null) {
      answer = CompletableFuture.failedFuture(new NullPointerException("handler returned null"));
    }
    return answer.whenComplete(
        (result, failure) -> {
          if (failure != null || result == null) {
            span.setStatus(StatusCode.ERROR, String.valueOf(failure));
          } else {
            span.setAttribute(STATUS, (long) result.status());
            if (result.status() >= 500) {
              span.setStatus(StatusCode.ERROR);
            }
          }
          span.end();
        });
  }
}
