package dev.weir.envoy.rlqs;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The meters of the RLQS service: open streams, usage reports, the requests proxies reported and
 * the bucket actions sent (see {@code docs/rlqs.md}).
 */
public final class RlqsMetrics {

  /** The prefix of every meter name. */
  public static final String PREFIX = "weir.rlqs.";

  private final MeterRegistry registry;
  private final Counter usageReports;
  private final Counter allowed;
  private final Counter denied;
  private final Map<Assignments.Kind, Counter> assignments = new EnumMap<>(Assignments.Kind.class);

  /** Creates the meters in {@code registry}. */
  public RlqsMetrics(MeterRegistry registry) {
    this.registry = registry;
    this.usageReports = registry.counter(PREFIX + "usage_reports");
    this.allowed = registry.counter(PREFIX + "requests", "outcome", "allowed");
    this.denied = registry.counter(PREFIX + "requests", "outcome", "denied");
    for (Assignments.Kind kind : Assignments.Kind.values()) {
      assignments.put(
          kind,
          registry.counter(PREFIX + "assignments", "action", kind.name().toLowerCase(Locale.ROOT)));
    }
  }

  /** Returns meters in a registry of their own, for tests and callers without one. */
  public static RlqsMetrics unregistered() {
    return new RlqsMetrics(new SimpleMeterRegistry());
  }

  /** Reports the number of open streams from {@code streams}. */
  void watchStreams(Supplier<Number> streams) {
    Gauge.builder(PREFIX + "streams", streams).register(registry);
  }

  /** Counts one bucket usage report with its {@code allowed} and {@code denied} requests. */
  void usageReport(long allowedRequests, long deniedRequests) {
    usageReports.increment();
    allowed.increment(allowedRequests);
    denied.increment(deniedRequests);
  }

  /** Counts one bucket action sent. */
  void assignment(Assignments.Kind kind) {
    assignments.get(kind).increment();
  }
}
