package dev.weir.server;

import dev.weir.envoy.service.MatchTracing;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;

/**
 * {@link MatchTracing} with OpenTelemetry: a {@code weir.config_match} span (internal) per {@code
 * ShouldRateLimit} call, a child of the front-door span current on the calling thread, with the
 * domain, the number of descriptors and the rules that count them (at most {@link
 * OtelClusterTracing#MAX_NAMES}), never a descriptor's value. A call whose span is not sampled is
 * matched untraced.
 */
final class OtelMatchTracing implements MatchTracing {

  /** The number of descriptors in the call. */
  static final AttributeKey<Long> DESCRIPTORS = AttributeKey.longKey("weir.descriptors");

  /** The rules that count the call's descriptors, each once. */
  static final AttributeKey<List<String>> RULES = AttributeKey.stringArrayKey("weir.rules");

  private final Tracer tracer;

  OtelMatchTracing(Tracer tracer) {
    this.tracer = tracer;
  }

  @Override
  public MatchTracing.Span start(String domain, int descriptors) {
    Context parent = Context.current();
    if (!io.opentelemetry.api.trace.Span.fromContext(parent).getSpanContext().isSampled()) {
      return MatchTracing.Span.NONE;
    }
    io.opentelemetry.api.trace.Span span =
        tracer
            .spanBuilder("weir.config_match")
            .setParent(parent)
            .setAttribute(FrontDoorTracing.DOMAIN, domain)
            .setAttribute(DESCRIPTORS, (long) descriptors)
            .startSpan();
    return new OtelMatch(span);
  }

  @Override
  public <T, R> Function<T, R> inCurrentContext(Function<T, R> step) {
    return Context.current().wrapFunction(step);
  }

  /** One traced match: collects the distinct rules, recorded when it ends. */
  private static final class OtelMatch implements MatchTracing.Span {
    private final io.opentelemetry.api.trace.Span span;
    private final Set<String> rules = new LinkedHashSet<>();

    OtelMatch(io.opentelemetry.api.trace.Span span) {
      this.span = span;
    }

    @Override
    public void matched(String rule) {
      if (rules.size() < OtelClusterTracing.MAX_NAMES) {
        rules.add(rule);
      }
    }

    @Override
    public void end() {
      span.setAttribute(RULES, List.copyOf(rules));
      span.end();
    }
  }
}
