package dev.weir.server;

import dev.weir.core.toplimited.LimitedKey;
import dev.weir.core.toplimited.OverLimitRecorder;
import dev.weir.metrics.micrometer.MicrometerMetrics;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.concurrent.ConcurrentHashMap;

/**
 * {@code weir_over_limit_decisions_total{source, domain, rule}}: over-limit answers per rule, for
 * dashboards. Never a key's values: at most {@code maxRules} distinct (domain, rule) series per
 * source, the answers of any rule beyond them counted under {@code rule="_other"} (with its source
 * and an empty domain), so clients choosing native names cannot create series without bound, nor
 * take the series of Envoy rules.
 */
final class OverLimitRuleMeter implements OverLimitRecorder {

  /** The meter's name (Prometheus adds {@code _total}). */
  static final String NAME = MicrometerMetrics.OVER_LIMIT_DECISIONS;

  /** The rule label of answers past the cap. */
  static final String OTHER = "_other";

  private record Series(String source, String domain, String rule) {}

  private final MeterRegistry registry;
  private final int maxRules;
  private final ConcurrentHashMap<Series, Counter> counters = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, Integer> taken = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, Counter> others = new ConcurrentHashMap<>();

  /** Creates the meter in {@code registry}, labelling at most {@code maxRules} rules per source. */
  OverLimitRuleMeter(MeterRegistry registry, int maxRules) {
    this.registry = registry;
    this.maxRules = maxRules;
  }

  @Override
  public void overLimit(LimitedKey key, long hits) {
    Series series = new Series(key.source(), key.domain(), key.rule());
    Counter counter = counters.get(series);
    if (counter == null && full(key.source())) {
      counter = others.get(key.source());
    }
    if (counter == null) {
      counter = register(series);
    }
    counter.increment();
  }

  private synchronized Counter register(Series series) {
    Counter counter = counters.get(series);
    if (counter != null) {
      return counter;
    }
    if (full(series.source())) {
      return others.computeIfAbsent(series.source(), s -> counter(s, "", OTHER));
    }
    counter = counter(series.source(), series.domain(), series.rule());
    counters.put(series, counter);
    taken.merge(series.source(), 1, Integer::sum);
    return counter;
  }

  /** Returns whether {@code source} has its {@code maxRules} series. */
  private boolean full(String source) {
    return taken.getOrDefault(source, 0) >= maxRules;
  }

  private Counter counter(String source, String domain, String rule) {
    return Counter.builder(NAME)
        .description("Answers over the limit, per rule")
        .tag("source", source)
        .tag("domain", domain)
        .tag("rule", rule)
        .register(registry);
  }
}
