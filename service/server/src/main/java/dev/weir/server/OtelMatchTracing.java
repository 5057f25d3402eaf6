package dev.weir.server;

import dev.weir.envoy.service.MatchTracing;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import java.util.List;
import java.util.function.Function;

/**
 * {@link MatchTracing} with OpenTelemetry: a {@code weir.config_match} span (internal) per {@code
 * ShouldRateLimit} call, a child of the front-door span current on the calling thread, with the
 * domain, the number of descriptors and the rules that count them (at most {@link
 * OtelClusterTracing#MAX_NAMES}), never a descriptor's value; the rules over their limit go on the
 * front-door span, the enforced ones and the shadow-mode ones apart. A call whose span is not
 * sampled is matched untraced.
 */
final class OtelMatchTracing implements MatchTracing {

  /** The number of descriptors in the call. */
  static final AttributeKey<Long> DESCRIPTORS = AttributeKey.longKey("weir.descriptors");

  /** The rules that count the call's descriptors, each once. */
  static final AttributeKey<List<String>> RULES = AttributeKey.stringArrayKey("weir.rules");

  /**
   * The deciding policies' rules of the call's descriptors over their limit, not in shadow mode,
   * each once.
   */
  static final AttributeKey<List<String>> OVER_LIMIT_RULES =
      AttributeKey.stringArrayKey("weir.over_limit_rules");

  /** The rules over their limit in the call that shadow mode answered OK, each once. */
  static final AttributeKey<List<String>> SHADOW_OVER_LIMIT_RULES =
      AttributeKey.stringArrayKey("weir.shadow_over_limit_rules");

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
    return new OtelMatch(span, io.opentelemetry.api.trace.Span.fromContext(parent));
  }

  @Override
  public <T, R> Function<T, R> inCurrentContext(Function<T, R> step) {
    return Context.current().wrapFunction(step);
  }

  /**
   * One traced match: collects the distinct rules, recorded when it ends, then the distinct rules
   * over their limit, recorded on the call's span when the answer is built.
   */
  private static final class OtelMatch implements MatchTracing.Span {
    private final io.opentelemetry.api.trace.Span span;
    private final io.opentelemetry.api.trace.Span call;
    private final CappedNames rules = new CappedNames();
    private final CappedNames overLimit = new CappedNames();
    private final CappedNames shadowOverLimit = new CappedNames();

    OtelMatch(io.opentelemetry.api.trace.Span span, io.opentelemetry.api.trace.Span call) {
      this.span = span;
      this.call = call;
    }

    @Override
    public void matched(String rule) {
      rules.add(rule);
    }

    @Override
    public void end() {
      span.setAttribute(RULES, rules.toList());
      span.end();
    }

    @Override
    public void overLimit(String rule, boolean shadowed) {
      (shadowed ? shadowOverLimit : overLimit).add(rule);
    }

    @Override
    public void answered(boolean globallyShadowed) {
      if (globallyShadowed) {
        shadowOverLimit.addAll(overLimit);
      } else if (!overLimit.isEmpty()) {
        call.setAttribute(OVER_LIMIT_RULES, overLimit.toList());
      }
      if (!shadowOverLimit.isEmpty()) {
        call.setAttribute(SHADOW_OVER_LIMIT_RULES, shadowOverLimit.toList());
      }
    }
  }
}
