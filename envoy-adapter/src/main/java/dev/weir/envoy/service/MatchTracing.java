package dev.weir.envoy.service;

import java.util.function.Function;

/**
 * The span of a {@code ShouldRateLimit} call's config match: its descriptors matched against the
 * domain's rules, before any counter is checked. {@link #NONE} records nothing and allocates
 * nothing; the composition root supplies a real one when tracing is on. A span records the domain,
 * the number of descriptors and the names of the rules that matched, never a descriptor's value;
 * once the answer is built, it records on the call's span (its parent) the rules that were over
 * their limit.
 */
public interface MatchTracing {

  /** The tracing of a node with tracing off: every span is {@link Span#NONE}. */
  MatchTracing NONE = (domain, descriptors) -> Span.NONE;

  /**
   * Starts the span of matching {@code descriptors} descriptors of a call for {@code domain}, a
   * child of the calling thread's current span.
   */
  Span start(String domain, int descriptors);

  /**
   * Returns {@code step} made to run in the calling thread's trace context wherever it runs later
   * (a core call's completion thread), so that the forwards it makes are children of the call's
   * span: the second check of {@code WEIR_ENVOY_STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT}. With
   * tracing off, {@code step} itself.
   */
  default <T, R> Function<T, R> inCurrentContext(Function<T, R> step) {
    return step;
  }

  /** A started match span. */
  interface Span {

    /** The span of a node with tracing off: records nothing. */
    Span NONE =
        new Span() {
          @Override
          public void matched(String rule) {}

          @Override
          public void end() {}

          @Override
          public void overLimit(String rule, boolean shadowed) {}

          @Override
          public void answered(boolean globallyShadowed) {}
        };

    /**
     * Records that a descriptor matched {@code rule} (counted under it, or unlimited by it): the
     * rule's YAML {@code name}, else the descriptor path it matched ({@code limit_override.k1.k2}
     * for a limit override); called once per policy of each matched descriptor, after {@code
     * replaces} is applied.
     */
    void matched(String rule);

    /** Ends the span. */
    void end();

    /**
     * Records that a descriptor's counter under {@code rule} (named as {@link #matched} names it)
     * was over its limit, answered OK by the rule's shadow mode when {@code shadowed}; called after
     * {@link #end}, once per descriptor over its limit.
     */
    void overLimit(String rule, boolean shadowed);

    /**
     * Records the rules {@link #overLimit} named on the call's span, all of them as answered OK by
     * shadow mode when {@code globallyShadowed} (the global shadow mode turned the call's
     * OVER_LIMIT into OK); called once, when the answer is built.
     */
    void answered(boolean globallyShadowed);
  }
}
