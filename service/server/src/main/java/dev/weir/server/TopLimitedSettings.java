package dev.weir.server;

import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;

/**
 * The settings of the top-limited view ({@code GET /v1/TopLimited}) and of the over-limit metric.
 *
 * @param enabled whether over-limit answers are counted and the view is served ({@code
 *     WEIR_TOP_LIMITED})
 * @param counters the counters of each minute's Space-Saving sketch ({@code
 *     WEIR_TOP_LIMITED_COUNTERS})
 * @param hashKeys whether the view shows key values hashed ({@code WEIR_TOP_LIMITED_HASH_KEYS})
 * @param metricRules the most distinct rules {@code weir_over_limit_decisions_total} labels per
 *     source ({@code WEIR_OVER_LIMIT_METRIC_RULES}; 0 turns it off)
 */
record TopLimitedSettings(boolean enabled, int counters, boolean hashKeys, int metricRules) {

  /** {@code WEIR_TOP_LIMITED}: a boolean. */
  static final EnvVar ENABLED = EnvVar.of("WEIR_TOP_LIMITED");

  /** {@code WEIR_TOP_LIMITED_COUNTERS}: a whole number. */
  static final EnvVar COUNTERS = EnvVar.of("WEIR_TOP_LIMITED_COUNTERS");

  /** {@code WEIR_TOP_LIMITED_HASH_KEYS}: a boolean. */
  static final EnvVar HASH_KEYS = EnvVar.of("WEIR_TOP_LIMITED_HASH_KEYS");

  /** {@code WEIR_OVER_LIMIT_METRIC_RULES}: a whole number. */
  static final EnvVar METRIC_RULES = EnvVar.of("WEIR_OVER_LIMIT_METRIC_RULES");

  /** The number of minutes the view's window spans. */
  static final int WINDOW_MINUTES = 5;

  /** The defaults: on, 1000 counters a minute, raw keys, 100 rules in the metric. */
  static final TopLimitedSettings DEFAULTS = new TopLimitedSettings(true, 1000, false, 100);

  /** Reads the settings from {@code env}. */
  static TopLimitedSettings from(EnvReader env) {
    return new TopLimitedSettings(
        env.bool(ENABLED, DEFAULTS.enabled),
        env.intInRange(COUNTERS, DEFAULTS.counters, 10, 100_000),
        env.bool(HASH_KEYS, DEFAULTS.hashKeys),
        env.intInRange(METRIC_RULES, DEFAULTS.metricRules, 0, 10_000));
  }
}
