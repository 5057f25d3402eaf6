package dev.weir.envoy.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigLoadOptions;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.DescriptorLevel;
import dev.weir.envoy.config.DescriptorNode;
import dev.weir.envoy.match.DescriptorMatcher;
import dev.weir.envoy.match.Entry;
import dev.weir.envoy.match.Match;
import dev.weir.envoy.match.MatchedLevel;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class CounterKeysTest {

  private static final DescriptorLevel ROOT = load();
  private static final CounterKeys KEYS = new CounterKeys(16);

  private static DescriptorLevel load() {
    String yaml =
        """
        domain: d
        descriptors:
          - key: path
            value: /api
            descriptors:
              - key: user
                rate_limit: {unit: second, requests_per_unit: 1}
          - key: files
            value: "rep*"
            share_threshold: true
            rate_limit: {unit: second, requests_per_unit: 1}
          - key: img
            value: "*.png"
            value_to_metric: true
            rate_limit: {unit: second, requests_per_unit: 1}
          - key: ip
            detailed_metric: true
            rate_limit: {unit: second, requests_per_unit: 1}
          - key: route
            value: api/*
            share_threshold: true
            value_to_metric: true
            descriptors:
              - key: method
                rate_limit: {unit: minute, requests_per_unit: 60}
          - key: service
            value: svc/*
            share_threshold: true
            descriptors:
              - key: endpoint
                detailed_metric: true
                rate_limit: {unit: minute, requests_per_unit: 80}
        """;
    try {
      return new ConfigLoader(ConfigLoadOptions.DEFAULTS)
          .compile(List.of(new ConfigFile("d.yaml", yaml)))
          .domain("d")
          .orElseThrow()
          .root();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private static Match match(Entry... entries) {
    return DescriptorMatcher.match(ROOT, List.of(entries)).orElseThrow();
  }

  @Test
  void ruleNameAndUniqueKey_nestedKeyOnly_lengthPrefixedRulePathAndActualValues() {
    Match m = match(new Entry("path", "/api"), new Entry("user", "alice"));

    assertThat(CounterKeys.ruleName("d", m)).isEqualTo("envoy:1:d/4:path=4:/api/4:user");
    assertThat(m.node().counterName()).isEqualTo(CounterKeys.ruleName("d", m));
    assertThat(KEYS.uniqueKey(m)).isEqualTo("4:path=4:/api,4:user=5:alice");
    assertThat(StatsKeys.rule(m)).isEqualTo("path_/api.user");
  }

  @Test
  void boundedName_longerThanANameMayBe_digestElseUnchanged() {
    CounterKeys keys = new CounterKeys(16, 40, 1024);
    String long41 = "envoy:" + "n".repeat(35);

    assertThat(keys.boundedName("envoy:short")).isEqualTo("envoy:short");
    assertThat(keys.boundedName(long41)).isEqualTo(CounterKeys.digest(long41));
    assertThat(keys.boundedName("é".repeat(21))).as("42 UTF-8 bytes").startsWith("#");
  }

  @Test
  void uniqueKey_longerThanAKeyMayBe_digestOfTheWholeKey() {
    Match m = match(new Entry("path", "/api"), new Entry("user", "alice"));

    assertThat(new CounterKeys(16).uniqueKey(m)).hasSize(28);
    assertThat(new CounterKeys(16, 1024, 28).uniqueKey(m)).isEqualTo("4:path=4:/api,4:user=5:alice");
    assertThat(new CounterKeys(16, 1024, 27).uniqueKey(m))
        .isEqualTo(CounterKeys.digest("4:path=4:/api,4:user=5:alice"));
  }

  @Test
  void uniqueKey_shareThresholdWildcard_usesThePattern() {
    Match m = match(new Entry("files", "report-7"));

    assertThat(KEYS.uniqueKey(m)).isEqualTo("5:files=4:rep*");
    assertThat(StatsKeys.rule(m)).isEqualTo("files_rep*");
  }

  @Test
  void statsRule_valueToMetricAndDetailedMetric_nameActualValues() {
    assertThat(StatsKeys.rule(match(new Entry("img", "a.png")))).isEqualTo("img_a.png");
    assertThat(StatsKeys.rule(match(new Entry("ip", "10.0.0.1")))).isEqualTo("ip_10.0.0.1");
  }

  @Test
  void statsRule_shareThresholdWithValueToMetricOrDetailedMetric_keepsThePattern() {
    // envoyproxy/ratelimit's TestShareThreshold: share_threshold takes priority over both.
    Entry service = new Entry("service", "svc/user");
    assertThat(StatsKeys.rule(match(new Entry("route", "api/v1"), new Entry("method", "GET"))))
        .isEqualTo("route_api/*.method");
    assertThat(StatsKeys.rule(match(service, new Entry("endpoint", "get"))))
        .isEqualTo("service_svc/*.endpoint_get");
    assertThat(StatsKeys.rule(match(service, new Entry("endpoint", ""))))
        .isEqualTo("service_svc/*.endpoint");
  }

  @Test
  void configLabel_labelsWithoutRequestValues_theLabelOfEveryMatch_elseEmpty() {
    List<Match> matches =
        List.of(
            match(new Entry("path", "/api"), new Entry("user", "alice")),
            match(new Entry("files", "report-7")),
            match(new Entry("route", "api/v1"), new Entry("method", "GET")),
            match(new Entry("img", "a.png")),
            match(new Entry("ip", "10.0.0.1")),
            match(new Entry("service", "svc/user"), new Entry("endpoint", "get")));
    List<String> labels = new ArrayList<>();
    for (Match m : matches) {
      List<DescriptorNode> path = m.levels().stream().map(MatchedLevel::node).toList();
      labels.add(StatsKeys.configLabel(path).orElse("(from values)"));
      StatsKeys.configLabel(path)
          .ifPresent(label -> assertThat(label).isEqualTo(StatsKeys.rule(m)));
    }

    assertThat(labels)
        .containsExactly(
            "path_/api.user",
            "files_rep*",
            "route_api/*.method",
            "(from values)",
            "(from values)",
            "(from values)");
  }

  @Test
  void statsRule_detailedMetricEmptyValue_keepsTheUnderscore() {
    assertThat(StatsKeys.rule(match(new Entry("ip", "")))).isEqualTo("ip_");
  }

  @Test
  void uniqueKey_valuesThatUnderscoreJoinAlike_differ() {
    assertThat(KEYS.uniqueKey(List.of(new Entry("a", "x_b"), new Entry("b", "y"))))
        .isNotEqualTo(KEYS.uniqueKey(List.of(new Entry("a", "x"), new Entry("b", "b_y"))));
  }

  @Test
  void overrideName_includesDomainAndUnit() {
    assertThat(CounterKeys.overrideName("d", Unit.HOUR)).isEqualTo("envoy-override:1:d/HOUR");
  }

  @Test
  void statsOverride_differentValues_sameKeysOnlyLabel() {
    String alice = StatsKeys.override(List.of(new Entry("user", "alice"), new Entry("ip", "1")));
    String bob = StatsKeys.override(List.of(new Entry("user", "bob"), new Entry("ip", "2")));

    assertThat(alice).isEqualTo("limit_override.user.ip").isEqualTo(bob);
  }

  @Test
  void uniqueKey_valueOverTheVerbatimLength_writtenAsItsDigest() {
    String longValue = "/productpage?" + "a".repeat(1100);
    Match m = match(new Entry("path", "/api"), new Entry("user", longValue));

    String key = KEYS.uniqueKey(m);

    assertThat(key).isEqualTo("4:path=4:/api,4:user=" + CounterKeys.digest(longValue));
    assertThat(key).hasSizeLessThan(80).matches(".*=#[A-Za-z0-9_-]{43}$");
  }

  @Test
  void uniqueKey_differentLongValues_differentKeys_sameLongValue_sameKey() {
    String a = "x".repeat(5000) + "a";
    String b = "x".repeat(5000) + "b";

    assertThat(KEYS.uniqueKey(List.of(new Entry("k", a))))
        .isNotEqualTo(KEYS.uniqueKey(List.of(new Entry("k", b))))
        .isEqualTo(KEYS.uniqueKey(List.of(new Entry("k", a))))
        .isNotEqualTo(KEYS.uniqueKey(List.of(new Entry("k", CounterKeys.digest(a)))));
  }

  @Test
  void uniqueKey_verbatimLengthCountsUtf8Bytes() {
    String sixteenBytes = "\u00e9".repeat(8);
    String eighteenBytes = "\u00e9".repeat(9);

    assertThat(KEYS.uniqueKey(List.of(new Entry("k", sixteenBytes))))
        .isEqualTo("1:k=8:" + sixteenBytes);
    assertThat(KEYS.uniqueKey(List.of(new Entry("k", eighteenBytes))))
        .isEqualTo("1:k=" + CounterKeys.digest(eighteenBytes));
  }

  @Test
  void statsRule_detailedMetricWithLongValue_labelBounded() {
    String longIp = "1".repeat(100);

    assertThat(StatsKeys.rule(match(new Entry("ip", longIp)), KEYS))
        .isEqualTo("ip_" + CounterKeys.digest(longIp));
  }
}
