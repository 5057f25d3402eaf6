package dev.weir.envoy.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.testkit.Await;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The adapter's counters leave as envoyproxy/ratelimit's StatsD lines: its names, what each counter
 * gained since the last flush, nothing for counters that did not move.
 */
class StatsdStatsTest {

  private final List<String> lines = new CopyOnWriteArrayList<>();
  private final StatsdStats statsd =
      StatsdStats.toLines(Duration.ofHours(1), Map.of("env", "prod"), lines::addAll);
  private final EnvoyMetrics metrics = new EnvoyMetrics(new SimpleMeterRegistry(), statsd);

  @AfterEach
  void close() {
    statsd.close();
  }

  private void awaitLines(String... expected) throws InterruptedException {
    Await.until(
        Duration.ofSeconds(10),
        () -> lines.containsAll(List.of(expected)),
        "lines " + List.of(expected) + " among " + lines);
  }

  @Test
  void ruleAndServiceCounters_areSentUnderTheReferenceNamesAsDeltas() throws Exception {
    statsd.watch(metrics);
    RuleCounters rule = metrics.rule("shop", "path_/api.user", false);
    rule.totalHits().increment(3);
    rule.withinLimit().increment(2);
    rule.overLimit().increment(1);
    metrics.configLoadSuccess();
    statsd.flush();

    awaitLines(
        "ratelimit.service.rate_limit.shop.path_/api.user.total_hits.__env=prod:3|c",
        "ratelimit.service.rate_limit.shop.path_/api.user.within_limit.__env=prod:2|c",
        "ratelimit.service.rate_limit.shop.path_/api.user.over_limit.__env=prod:1|c",
        "ratelimit.service.config_load_success.__env=prod:1|c");
    rule.totalHits().increment(2);
    statsd.flush();
    statsd.flush();
    awaitLines("ratelimit.service.rate_limit.shop.path_/api.user.total_hits.__env=prod:2|c");

    assertThat(lines).noneMatch(line -> line.contains("near_limit") || line.contains(":0|c"));
    assertThat(lines).hasSize(5);
  }

  @Test
  void names_replaceStatsdSeparatorsAndIpv4Dots() {
    ReferenceStatNames names = new ReferenceStatNames(Map.of());

    assertThat(names.rule("a:b|c", "remote_address_10.0.0.1.path_/x.y", "over_limit"))
        .isEqualTo(
            "ratelimit.service.rate_limit.a_b_c.remote_address_10_0_0_1.path_/x.y.over_limit");
    assertThat(names.service("call.should_rate_limit.service_error"))
        .isEqualTo("ratelimit.service.call.should_rate_limit.service_error");
  }

  @Test
  void ruleWithANewline_isSentAsOneLineNotTwoMetrics() throws Exception {
    statsd.watch(metrics);
    metrics.rule("shop", "limit_override.a\nforged.x\r", true).totalHits().increment(1);
    statsd.flush();

    awaitLines(
        "ratelimit.service.rate_limit.shop.limit_override.a_forged.x_.total_hits.__env=prod:1|c");
    assertThat(lines).noneMatch(line -> line.contains("\n") || line.contains("\r"));
  }

  @Test
  void extraTags_followTheNameSortedByKey() {
    ReferenceStatNames names = new ReferenceStatNames(Map.of("z", "1", "a", "x.y"));

    assertThat(names.service("config_load_error"))
        .isEqualTo("ratelimit.service.config_load_error.__a=x_y.__z=1");
  }
}
