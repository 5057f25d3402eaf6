package dev.weir.envoy.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.testkit.FakeClock;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.EnvoyConfig;
import dev.weir.envoy.metrics.EnvoyMetrics;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class WarmUpRequestsTest {

  /** Five limited rules in two domains: key-only, exact, nested, pattern and several policies. */
  private static final String YAML =
      """
      domain: edge
      descriptors:
        - key: remote_address
          rate_limit: {unit: second, requests_per_unit: 1000}
        - key: header_match
          value: api
          descriptors:
            - key: path
              rate_limit: {unit: minute, requests_per_unit: 1000}
        - key: path
          value: /static/*
          rate_limit: {unit: hour, requests_per_unit: 1000}
        - key: group_only
          value: x
          descriptors:
            - key: plan
              value: gold
              rate_limits:
                - {unit: second, requests_per_unit: 1000, name: burst}
                - {unit: day, requests_per_unit: 1000, name: daily}
      """;

  private static final String OTHER =
      """
      domain: acct
      descriptors:
        - key: account_id
          rate_limit: {unit: minute, requests_per_unit: 1000}
      """;

  private final FakeClock clock = new FakeClock();
  private final RecordingRateLimitService service = new RecordingRateLimitService(clock);

  private static EnvoyConfig compile(String... files) throws Exception {
    List<ConfigFile> configs =
        IntStream.range(0, files.length)
            .mapToObj(i -> new ConfigFile(i + ".yaml", files[i]))
            .toList();
    return new ConfigLoader(EnvoySettings.fromEnvironment(Map.of()).loadOptions())
        .compile(configs);
  }

  private ShouldRateLimitHandler handler(EnvoyConfig config) {
    ConfigHolder holder = new ConfigHolder();
    holder.set(config);
    return new ShouldRateLimitHandler(
        holder,
        service,
        clock,
        EnvoySettings.fromEnvironment(Map.of()),
        new EnvoyMetrics(new SimpleMeterRegistry()));
  }

  /** Returns the values {@code requests} give {@code key}. */
  private static List<String> values(List<RateLimitRequest> requests, String key) {
    return requests.stream()
        .flatMap(request -> request.getDescriptorsList().stream())
        .flatMap(descriptor -> descriptor.getEntriesList().stream())
        .filter(entry -> entry.getKey().equals(key))
        .map(RateLimitDescriptor.Entry::getValue)
        .toList();
  }

  @Test
  void from_everyDescriptorMatchesALimitedRuleAndEveryLimitedRuleIsCounted() throws Exception {
    EnvoyConfig config = compile(YAML, OTHER);
    ShouldRateLimitHandler handler = handler(config);

    List<RateLimitRequest> requests = WarmUpRequests.from(config, 64);
    List<RateLimitResponse> answers =
        requests.stream().map(request -> handler.decide(request).join()).toList();

    assertThat(requests).hasSize(64);
    assertThat(answers)
        .flatExtracting(RateLimitResponse::getStatusesList)
        .allSatisfy(status -> assertThat(status.hasCurrentLimit()).isTrue())
        .extracting(DescriptorStatus::getCode)
        .containsOnly(RateLimitResponse.Code.OK);
    assertThat(
            service.calls().stream()
                .flatMap(List::stream)
                .map(dev.weir.core.model.RateLimitRequest::name)
                .collect(Collectors.toSet()))
        .as("the counters of the six policies of the five limited rules")
        .hasSize(6);
    assertThat(requests)
        .extracting(RateLimitRequest::getDomain)
        .containsOnly("acct", "edge");
  }

  @Test
  void from_keyOnlyAndPatternRules_everyOtherTimeAFewValuesElseMany() throws Exception {
    List<RateLimitRequest> requests = WarmUpRequests.from(compile(YAML), 4096);

    List<String> addresses = values(requests, "remote_address");
    Map<String, Long> uses =
        addresses.stream().collect(Collectors.groupingBy(v -> v, Collectors.counting()));
    assertThat(uses.keySet().stream().filter(v -> uses.get(v) >= 16))
        .as("the hot values, each used many times")
        .hasSize(WarmUpRequests.HOT_VALUES);
    assertThat(uses.size())
        .as("hot and cold values")
        .isGreaterThan(WarmUpRequests.HOT_VALUES + 100);
    assertThat(values(requests, "path"))
        .filteredOn(value -> value.startsWith("/static/"))
        .allMatch(value -> value.matches("/static/warm-up-[0-9]+"))
        .isNotEmpty();
    assertThat(values(requests, "plan")).containsOnly("gold");
    assertThat(values(requests, "header_match")).containsOnly("api");
  }

  @Test
  void from_configWithoutLimitedRule_none() throws Exception {
    EnvoyConfig config =
        compile(
            """
            domain: open
            descriptors:
              - key: group
                value: x
            """);

    assertThat(WarmUpRequests.from(config, 100)).isEmpty();
    assertThat(WarmUpRequests.from(new EnvoyConfig(Map.of()), 100)).isEmpty();
  }

  @Test
  void from_negativeCount_refused() throws Exception {
    EnvoyConfig config = compile(OTHER);

    assertThatThrownBy(() -> WarmUpRequests.from(config, -1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("count must be at least 0, got -1");
  }
}
