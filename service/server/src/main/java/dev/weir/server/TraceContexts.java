package dev.weir.server;

import dev.weir.http.HttpCall;
import io.grpc.Metadata;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The W3C {@code traceparent} as Weir reads and writes it: from a gRPC call's metadata (what
 * Envoy's rate-limit filter sends) or an HTTP request's headers, and to and from a forwarded item's
 * {@code metadata} map.
 */
final class TraceContexts {

  private static final W3CTraceContextPropagator W3C = W3CTraceContextPropagator.getInstance();

  private static final TextMapGetter<Map<String, String>> ITEM =
      new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Map<String, String> carrier) {
          return carrier.keySet();
        }

        @Override
        public String get(Map<String, String> carrier, String key) {
          return carrier == null ? null : carrier.get(key);
        }
      };

  private TraceContexts() {}

  /** Returns the context {@code headers} carry, or the root context when they carry none. */
  static Context fromHeaders(Metadata headers) {
    return fromMap(
        HttpCall.traceContext(
            values(headers, HttpCall.TRACEPARENT), values(headers, HttpCall.TRACESTATE)));
  }

  private static List<String> values(Metadata headers, String name) {
    Iterable<String> all = headers.getAll(Metadata.Key.of(name, Metadata.ASCII_STRING_MARSHALLER));
    List<String> values = new ArrayList<>();
    if (all != null) {
      all.forEach(values::add);
    }
    return values;
  }

  /**
   * Returns the context of {@code headers} (W3C header names, lower case), or the root context when
   * they carry none.
   */
  static Context fromMap(Map<String, String> headers) {
    if (headers.isEmpty()) {
      return Context.root();
    }
    return W3C.extract(Context.root(), headers, ITEM);
  }

  /** Returns the span context an item's {@code metadata} carries, invalid when none. */
  static SpanContext fromItem(Map<String, String> metadata) {
    if (!metadata.containsKey(HttpCall.TRACEPARENT)) {
      return SpanContext.getInvalid();
    }
    return io.opentelemetry.api.trace.Span.fromContext(W3C.extract(Context.root(), metadata, ITEM))
        .getSpanContext();
  }

  /**
   * Returns {@code metadata} without a {@code traceparent} or {@code tracestate}: itself when it
   * has neither.
   */
  static Map<String, String> withoutContext(Map<String, String> metadata) {
    if (!metadata.containsKey(HttpCall.TRACEPARENT) && !metadata.containsKey(HttpCall.TRACESTATE)) {
      return metadata;
    }
    Map<String, String> out = new HashMap<>(metadata);
    out.remove(HttpCall.TRACEPARENT);
    out.remove(HttpCall.TRACESTATE);
    return out;
  }

  /**
   * Returns {@code metadata} with the {@code traceparent} (and {@code tracestate}, when it has one)
   * of {@code context} in place of any {@code metadata} had: a caller's {@code tracestate} belongs
   * to the caller's {@code traceparent} and never travels with another.
   */
  static Map<String, String> withContext(Map<String, String> metadata, Context context) {
    Map<String, String> out = new HashMap<>(metadata);
    out.remove(HttpCall.TRACEPARENT);
    out.remove(HttpCall.TRACESTATE);
    W3C.inject(context, out, (carrier, key, value) -> carrier.put(key, value));
    return out;
  }
}
