package dev.weir.envoy.metrics;

import io.micrometer.core.instrument.Clock;
import io.micrometer.core.instrument.Counter;
import io.micrometer.statsd.StatsdConfig;
import io.micrometer.statsd.StatsdFlavor;
import io.micrometer.statsd.StatsdMeterRegistry;
import io.micrometer.statsd.StatsdProtocol;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Sends the Envoy adapter's counters over StatsD under envoyproxy/ratelimit's names ({@link
 * ReferenceStatNames}), so that dashboards and Envoy Gateway's {@code statsd_exporter} mapping keep
 * working: {@code total_hits}, {@code over_limit}, {@code near_limit}, {@code within_limit} and
 * {@code shadow_mode} per rule; {@code config_load_success}, {@code config_load_error}, {@code
 * global_shadow_mode} and {@code call.should_rate_limit.service_error} for the service.
 *
 * <p>Nothing is counted twice and the request path does no StatsD work: every flush interval, what
 * each {@link EnvoyMetrics} counter gained since the last flush is sent as one counter line ({@code
 * name:n|c}), and nothing for a counter that did not move, the way the reference's library
 * (lyft/gostats) flushes. Micrometer's StatsD registry writes the lines and packs them into UDP
 * packets.
 */
public final class StatsdStats implements EnvoyMetrics.Observer, AutoCloseable {

  private final StatsdMeterRegistry registry;
  private final ReferenceStatNames names;
  private final List<Flushed> counters = new CopyOnWriteArrayList<>();
  private final ScheduledExecutorService flusher;

  private StatsdStats(
      StatsdMeterRegistry registry, ReferenceStatNames names, Duration flushInterval) {
    this.registry = registry;
    this.names = names;
    this.flusher =
        Executors.newSingleThreadScheduledExecutor(
            runnable -> {
              Thread thread = new Thread(runnable, "weir-statsd-flush");
              thread.setDaemon(true);
              return thread;
            });
    long every = flushInterval.toNanos();
    flusher.scheduleAtFixedRate(this::flush, every, every, TimeUnit.NANOSECONDS);
  }

  /** A counter sent over StatsD, and its value when last sent. */
  private static final class Flushed {
    private final Counter source;
    private final Counter statsd;
    private long sent;

    Flushed(Counter source, Counter statsd) {
      this.source = source;
      this.statsd = statsd;
    }

    void flush() {
      long now = (long) source.count();
      if (now > sent) {
        statsd.increment(now - sent);
        sent = now;
      }
    }
  }

  /**
   * Starts sending to {@code host:port} over UDP every {@code flushInterval}, each name followed by
   * {@code extraTags}.
   */
  public static StatsdStats start(
      String host, int port, Duration flushInterval, Map<String, String> extraTags) {
    return new StatsdStats(
        StatsdMeterRegistry.builder(config(host, port, flushInterval))
            .nameMapper((id, convention) -> id.getName())
            .clock(Clock.SYSTEM)
            .build(),
        new ReferenceStatNames(extraTags),
        flushInterval);
  }

  /** Like {@link #start} but hands each line to {@code lines} instead of sending it. */
  static StatsdStats toLines(
      Duration flushInterval, Map<String, String> extraTags, Consumer<String> lines) {
    return new StatsdStats(
        StatsdMeterRegistry.builder(config("localhost", 8125, flushInterval))
            .nameMapper((id, convention) -> id.getName())
            .clock(Clock.SYSTEM)
            .lineSink(lines)
            .build(),
        new ReferenceStatNames(extraTags),
        flushInterval);
  }

  private static StatsdConfig config(String host, int port, Duration flushInterval) {
    return new StatsdConfig() {
      @Override
      public String get(String key) {
        return null;
      }

      @Override
      public StatsdFlavor flavor() {
        return StatsdFlavor.ETSY;
      }

      @Override
      public String host() {
        return host;
      }

      @Override
      public int port() {
        return port;
      }

      @Override
      public StatsdProtocol protocol() {
        return StatsdProtocol.UDP;
      }

      @Override
      public Duration pollingFrequency() {
        return flushInterval;
      }
    };
  }

  /** Sends the service counters of {@code metrics} too. */
  public void watch(EnvoyMetrics metrics) {
    EnvoyMetrics.ServiceCounters service = metrics.service();
    poll(names.service("config_load_success"), service.configLoadSuccess());
    poll(names.service("config_load_error"), service.configLoadError());
    poll(names.service("global_shadow_mode"), service.globalShadowMode());
    poll(names.service("call.should_rate_limit.service_error"), service.serviceError());
  }

  @Override
  public void ruleCounters(String domain, String rule, RuleCounters counters) {
    poll(names.rule(domain, rule, "total_hits"), counters.totalHits());
    poll(names.rule(domain, rule, "over_limit"), counters.overLimit());
    poll(names.rule(domain, rule, "near_limit"), counters.nearLimit());
    poll(names.rule(domain, rule, "within_limit"), counters.withinLimit());
    poll(names.rule(domain, rule, "shadow_mode"), counters.shadowMode());
  }

  private void poll(String name, Counter counter) {
    counters.add(new Flushed(counter, registry.counter(name)));
  }

  /** Sends what each counter gained since the last flush. */
  synchronized void flush() {
    for (Flushed counter : counters) {
      counter.flush();
    }
  }

  /** Sends what is pending and stops. */
  @Override
  public void close() {
    flusher.shutdownNow();
    flush();
    registry.close();
  }
}
