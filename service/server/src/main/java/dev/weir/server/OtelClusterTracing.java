package dev.weir.server;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.tracing.ClusterTracing;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@link ClusterTracing} with OpenTelemetry: a {@code weir.forward} span (client) per call's items
 * for one owner, a child of the front-door span current on the calling thread; a {@code
 * weir.forward_batch} span (client) per batch sent to a peer, linked to the forward span of each
 * item in it and a child of the first sampled one; and a {@code weir.decide} span (server) per
 * forwarded item on its owner, a child of the forward span the item carries in its {@code
 * traceparent} metadata. The items of a call whose span is not sampled go as they are, untraced.
 * Spans carry rule names, counts, peers and outcomes, never a key's value.
 */
final class OtelClusterTracing implements ClusterTracing {

  /** The peer a forward or batch goes to. */
  static final AttributeKey<String> PEER = AttributeKey.stringKey("weir.peer");

  /** How many items a span covers. */
  static final AttributeKey<Long> ITEMS = AttributeKey.longKey("weir.items");

  /** The rate-limit names (rules) of a span's items, each once. */
  static final AttributeKey<List<String>> NAMES = AttributeKey.stringArrayKey("weir.names");

  /** The rate-limit name (rule) of one decision. */
  static final AttributeKey<String> NAME = AttributeKey.stringKey("weir.name");

  /** The outcome: {@code UNDER_LIMIT}, {@code OVER_LIMIT} (any item over) or {@code ERROR}. */
  static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("weir.outcome");

  /** How many of a span's items were over the limit. */
  static final AttributeKey<Long> OVER_LIMIT_ITEMS = AttributeKey.longKey("weir.over_limit_items");

  /** How many callers' forward spans a batch links to. */
  static final AttributeKey<Long> CALLERS = AttributeKey.longKey("weir.callers");

  /** The most names a span lists. */
  static final int MAX_NAMES = 10;

  /**
   * The forward of a call whose span is not sampled: its items go without any trace context a
   * caller put in their metadata, which would otherwise start sampled spans on both nodes.
   */
  private static final Forward UNTRACED =
      new Forward() {
        @Override
        public List<RateLimitRequest> items(List<RateLimitRequest> items) {
          List<RateLimitRequest> out = null;
          for (int i = 0; i < items.size(); i++) {
            RateLimitRequest r = items.get(i);
            if (r.metadata().isEmpty()) {
              continue;
            }
            Map<String, String> kept = TraceContexts.withoutContext(r.metadata());
            if (kept != r.metadata()) {
              if (out == null) {
                out = new ArrayList<>(items);
              }
              out.set(i, r.withMetadata(kept));
            }
          }
          return out == null ? items : out;
        }

        @Override
        public void answered(RateLimitResponse answer) {}
      };

  private final Tracer tracer;

  OtelClusterTracing(Tracer tracer) {
    this.tracer = tracer;
  }

  @Override
  public Forward forward(String owner, List<RateLimitRequest> items) {
    Context parent = Context.current();
    if (!io.opentelemetry.api.trace.Span.fromContext(parent).getSpanContext().isSampled()) {
      return UNTRACED;
    }
    io.opentelemetry.api.trace.Span span =
        tracer
            .spanBuilder("weir.forward")
            .setParent(parent)
            .setSpanKind(SpanKind.CLIENT)
            .setAttribute(PEER, owner)
            .setAttribute(ITEMS, (long) items.size())
            .setAttribute(NAMES, names(items))
            .startSpan();
    return new OtelForward(span, parent.with(span), items.size());
  }

  @Override
  public ClusterTracing.Span batch(String peer, List<RateLimitRequest> items) {
    Set<String> seen = new HashSet<>();
    List<SpanContext> callers = new ArrayList<>();
    SpanContext parent = null;
    for (RateLimitRequest item : items) {
      SpanContext caller = TraceContexts.fromItem(item.metadata());
      if (caller.isValid() && seen.add(caller.getSpanId())) {
        callers.add(caller);
        if (parent == null && caller.isSampled()) {
          parent = caller;
        }
      }
    }
    if (parent == null) {
      return ClusterTracing.Span.NONE;
    }
    SpanBuilder builder =
        tracer
            .spanBuilder("weir.forward_batch")
            .setParent(Context.root().with(io.opentelemetry.api.trace.Span.wrap(parent)))
            .setSpanKind(SpanKind.CLIENT)
            .setAttribute(PEER, peer)
            .setAttribute(ITEMS, (long) items.size())
            .setAttribute(CALLERS, (long) callers.size());
    callers.forEach(builder::addLink);
    io.opentelemetry.api.trace.Span span = builder.startSpan();
    return answer -> {
      if (answer != null && answer.isError()) {
        span.setStatus(StatusCode.ERROR, answer.error());
      }
      span.end();
    };
  }

  @Override
  public ClusterTracing.Span decide(RateLimitRequest item) {
    SpanContext caller = TraceContexts.fromItem(item.metadata());
    if (!caller.isValid()) {
      return ClusterTracing.Span.NONE;
    }
    io.opentelemetry.api.trace.Span span =
        tracer
            .spanBuilder("weir.decide")
            .setParent(Context.root().with(io.opentelemetry.api.trace.Span.wrap(caller)))
            .setSpanKind(SpanKind.SERVER)
            .setAttribute(NAME, item.name())
            .setAttribute("weir.hits", item.hits())
            .setAttribute("weir.limit", item.limit())
            .startSpan();
    return answer -> {
      span.setAttribute(OUTCOME, outcome(answer));
      if (answer.isError()) {
        span.setStatus(StatusCode.ERROR, answer.error());
      } else {
        span.setAttribute("weir.remaining", answer.remaining());
      }
      span.end();
    };
  }

  /** Returns the outcome attribute of one answer. */
  static String outcome(RateLimitResponse answer) {
    return answer.isError() ? "ERROR" : answer.status().name();
  }

  /** Returns the distinct names of {@code items}, at most {@link #MAX_NAMES}. */
  static List<String> names(List<RateLimitRequest> items) {
    CappedNames names = new CappedNames();
    for (RateLimitRequest item : items) {
      names.add(item.name());
    }
    return names.toList();
  }

  /** One traced forward: ends with the last of its items' answers. */
  private static final class OtelForward implements Forward {
    private final io.opentelemetry.api.trace.Span span;
    private final Context context;
    private final AtomicInteger left;
    private final AtomicInteger over = new AtomicInteger();
    private final AtomicInteger errors = new AtomicInteger();

    OtelForward(io.opentelemetry.api.trace.Span span, Context context, int items) {
      this.span = span;
      this.context = context;
      this.left = new AtomicInteger(items);
    }

    @Override
    public List<RateLimitRequest> items(List<RateLimitRequest> items) {
      List<RateLimitRequest> out = new ArrayList<>(items.size());
      for (RateLimitRequest r : items) {
        out.add(r.withMetadata(TraceContexts.withContext(r.metadata(), context)));
      }
      return out;
    }

    @Override
    public void answered(RateLimitResponse answer) {
      if (answer == null || answer.isError()) {
        errors.incrementAndGet();
      } else if (answer.status() == Status.OVER_LIMIT) {
        over.incrementAndGet();
      }
      if (left.decrementAndGet() == 0) {
        span.setAttribute(OVER_LIMIT_ITEMS, (long) over.get());
        span.setAttribute(
            OUTCOME, errors.get() > 0 ? "ERROR" : over.get() > 0 ? "OVER_LIMIT" : "UNDER_LIMIT");
        if (errors.get() > 0) {
          span.setStatus(StatusCode.ERROR, errors.get() + " items failed");
        }
        span.end();
      }
    }
  }
}
