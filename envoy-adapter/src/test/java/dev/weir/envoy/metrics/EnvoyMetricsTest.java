package dev.weir.envoy.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

/** The per-rule counters and their bound per domain. */
class EnvoyMetricsTest {

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final EnvoyMetrics metrics = new EnvoyMetrics(registry);

  @Test
  void rule_moreRulesThanTheBoundInADomain_laterOnesShareTheOtherLabel() {
    for (int i = 0; i < EnvoyMetrics.MAX_RULES_PER_DOMAIN; i++) {
      metrics.rule("d", "k_" + i, true).totalHits().increment();
    }

    RuleCounters beyond = metrics.rule("d", "k_" + EnvoyMetrics.MAX_RULES_PER_DOMAIN, true);
    beyond.totalHits().increment();
    metrics.rule("d", "k_" + (EnvoyMetrics.MAX_RULES_PER_DOMAIN + 1), true).totalHits().increment();

    assertThat(beyond).isSameAs(metrics.rule("d", EnvoyMetrics.OTHER_RULES, true));
    assertThat(
            registry.get("weir.envoy.rate_limit.total_hits").tag("rule", "_other").counter().count())
        .isEqualTo(2);
    assertThat(registry.find("weir.envoy.rate_limit.total_hits").tag("domain", "d").counters())
        .hasSize(EnvoyMetrics.MAX_RULES_PER_DOMAIN + 1);
    assertThat(metrics.rule("d", "k_0", true)).isNotSameAs(beyond);
    assertThat(metrics.rule("other-domain", "k_0", true)).isNotSameAs(beyond);
    assertThat(registry.find("weir.envoy.rate_limit.total_hits").tag("rule", "k_10000").counters())
        .isEmpty();
  }

  @Test
  void rule_configPathAfterTheValueLabelsAreTaken_countedUnderItsOwnLabel() {
    for (int i = 0; i < EnvoyMetrics.MAX_RULES_PER_DOMAIN; i++) {
      metrics.rule("d", "client_c" + i, true);
    }

    metrics.rule("d", "remote_address", false).totalHits().increment(3);

    assertThat(
            registry
                .get("weir.envoy.rate_limit.total_hits")
                .tag("rule", "remote_address")
                .counter()
                .count())
        .isEqualTo(3);
    assertThat(metrics.rule("d", "client_c" + EnvoyMetrics.MAX_RULES_PER_DOMAIN, true))
        .isSameAs(metrics.rule("d", EnvoyMetrics.OTHER_RULES, true));
  }

  @Test
  void rule_configPathsBeyondTheCap_shareTheOtherLabel() {
    for (int i = 0; i < EnvoyMetrics.MAX_RULES_PER_DOMAIN; i++) {
      metrics.rule("d", "path_" + i, false);
    }

    RuleCounters beyond = metrics.rule("d", "path_" + EnvoyMetrics.MAX_RULES_PER_DOMAIN, false);

    assertThat(beyond).isSameAs(metrics.rule("d", EnvoyMetrics.OTHER_RULES, false));
    assertThat(metrics.rule("d", "client_c0", true))
        .as("a value label, with a budget of its own")
        .isNotSameAs(beyond);
    assertThat(registry.get("weir.envoy.rate_limit.total_hits").counters())
        .hasSize(EnvoyMetrics.MAX_RULES_PER_DOMAIN + 2);
  }
}
