package dev.weir.envoy.metrics;

import io.micrometer.core.instrument.Counter;

/**
 * The counters of one rule, in hits, as envoyproxy/ratelimit keeps them.
 *
 * @param totalHits every hit asked for
 * @param overLimit hits refused (or, in shadow mode, that would have been)
 * @param nearLimit admitted hits above the near-limit threshold
 * @param withinLimit admitted hits
 * @param shadowMode over-limit hits admitted because the rule is in shadow mode
 */
public record RuleCounters(
    Counter totalHits,
    Counter overLimit,
    Counter nearLimit,
    Counter withinLimit,
    Counter shadowMode) {}
