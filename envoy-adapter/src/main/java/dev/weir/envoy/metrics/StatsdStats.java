package dev.weir.envoy.metrics;

import io.micrometer.core.instrument.Counter;
import java.time.Duration;
import java.util.ArrayList;
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
 * (lyft/gostats) flushes. The lines go out in UDP datagrams ({@link StatsdSender}).
 */
public final class StatsdStats implements EnvoyMetrics.Observer, AutoCloseable {

  private final ReferenceStatNames names;
  private final Consumer<List<String>> sink;
  private final AutoCloseable sender;
  private final List<Flushed> counters = new CopyOnWriteArrayList<>();
  private final ScheduledExecutorService flusher;

  private StatsdStats(
      ReferenceStatNames names,
      Consumer<List<String>> sink,
      AutoCloseable sender,
      Duration flushInterval) {
    this.names = names;
    this.sink = sink;
    this.sender = sender;
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

  /**
   * Starts sending to {@code host:port} over UDP every {@code flushInterval}, each name followed by
   * {@code extraTags}.
   */
  public static StatsdStats start(
      String host, int port, Duration flushInterval, Map<String, String> extraTags) {
    StatsdSender sender = new StatsdSender(host, port);
    return new StatsdStats(new ReferenceStatNames(extraTags), sender, sender, flushInterval);
  }

  /** Like {@link #start} but hands each flush's lines to {@code lines} instead of sending them. */
  static StatsdStats toLines(
      Duration flushInterval, Map<String, String> extraTags, Consumer<List<String>> lines) {
    return new StatsdStats(new ReferenceStatNames(extraTags), lines, () -> {}, flushInterval);
  }

  /** A counter sent over StatsD under {@code name}, and its value when last sent. */
  private static final class Flushed {
    private final String name;
    private final Counter source;
    private long sent;

    Flushed(String name, Counter source) {
      this.name = name;
      this.source = source;
    }

    /**
     * Adds the line of what the counter gained since the last call, if anything, to {@code out}.
     */
    void gain(List<String> out) {
      long now = (long) source.count();
      if (now > sent) {
        out.add(name + ":" + (now - sent) + "|c");
        sent = now;
      }
    }
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
    counters.add(new Flushed(name, counter));
  }

  /** Sends what each counter gained since the last flush. */
  synchronized void flush() {
    List<String> lines = new ArrayList<>();
    for (Flushed counter : counters) {
      counter.gain(lines);
    }
    if (!lines.isEmpty()) {
      sink.accept(lines);
    }
  }

  /** Sends what is pending and stops. */
  @Override
  public void close() {
    flusher.shutdownNow();
    flush();
    try {
      sender.close();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
