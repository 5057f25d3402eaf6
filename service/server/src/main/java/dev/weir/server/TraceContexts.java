package dev.weir.server;

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

  private static final TextMapGetter<Metadata> HEADERS =
      new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Metadata carrier) {
          return carrier.keys();
        }

        /**
         * Returns the one {@code traceparent} (none when the call has two: W3C Trace Context
         * starts a trace of its own then) or every {@code tracestate} entry combined into one list.
         */
        @Override
        public String get(Metadata carrier, String key) {
          if (carrier == null) {
            return null;
          }
          Iterable<String> all =
              carrier.getAll(Metadata.Key.of(key, Metadata.ASCII_STRING_MARSHALLER));
          if (all == null) {
            return null;
          }
          List<String> values = new ArrayList<>();
          all.forEach(values::add);
          if (key.equals("traceparent")) {
            return values.size() == 1 ? values.get(0) : null;
          }
          return String.join(",", values);
        }
      };

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
    return W3C.extract(Context.root(), headers, HEADERS);
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
    if (!metadata.containsKey("traceparent")) {
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
    if (!metadata.containsKey("traceparent") && !metadata.containsKey("tracestate")) {
      return metadata;
    }
    Map<String, String> out = new HashMap<>(metadata);
    out.remove("traceparent");
    out.remove("tracestate");
    return out;
  }

  /**
   * Returns {@code metadata} with the {@code traceparent} (and {@code tracestate}, when it has one)
   * of {@code context} in place of any {@code metadata} had: a caller's {@code tracestate} belongs
   * to the caller's {@code traceparent} and never travels with another.
   */
  static Map<String, String> withContext(Map<String, String> metadata, Context context) {
    Map<String, String> out = new HashMap<>(metadata);
    out.remove("traceparent");
    out.remove("tracestate");
    W3C.inject(context, out, (carrier, key, value) -> carrier.put(key, value));
    return out;
  }
}
