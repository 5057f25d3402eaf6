package dev.weir.envoy.service;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.UInt64Value;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigLoadOptions;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.EnvoyConfig;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.type.v3.RateLimitUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ExplainerTest {

  private static final String YAML =
      """
      domain: edge
      descriptors:
        - key: remote_address
          rate_limit: {unit: second, requests_per_unit: 10, name: per-ip}
        - key: header_match
          value: api
          descriptors:
            - key: path
              value: "/v1/*"
              shadow_mode: true
              rate_limits:
                - {unit: second, requests_per_unit: 5, name: burst}
                - {unit: minute, unit_multiplier: 5, requests_per_unit: 100, algorithm: token_bucket}
            - key: user
              rate_limit: {unit: minute, requests_per_unit: 2}
        - key: vip
          rate_limit: {unit: hour, requests_per_unit: 1, replaces: [{name: per-ip}]}
      """;

  private final Explainer explainer = new Explainer(InputLimits.DEFAULTS);

  private static EnvoyConfig config() throws Exception {
    return new ConfigLoader(ConfigLoadOptions.DEFAULTS)
        .compile(List.of(new ConfigFile("edge.yaml", YAML)));
  }

  private static RateLimitDescriptor descriptor(String... keyValues) {
    RateLimitDescriptor.Builder out = RateLimitDescriptor.newBuilder();
    for (int i = 0; i < keyValues.length; i += 2) {
      out.addEntries(
          RateLimitDescriptor.Entry.newBuilder().setKey(keyValues[i]).setValue(keyValues[i + 1]));
    }
    return out.build();
  }

  @Test
  void explain_multiPolicyWildcardMatch_namesRuleSourceCounterAndEachPolicy() throws Exception {
    List<RateLimitRequest> asked = new ArrayList<>();

    List<String> lines =
        explainer.explain(
            config(),
            "edge",
            List.of(descriptor("header_match", "api", "path", "/v1/users")),
            r -> {
              asked.add(r);
              return Optional.of("remaining " + r.limit());
            });

    assertThat(lines)
        .containsExactly(
            "descriptor 1: header_match=api, path=/v1/users",
            "  matched: header_match=api > path=/v1/* (wildcard) (edge.yaml:8)",
            "  counter: unique_key \"12:header_match=3:api,4:path=9:/v1/users\"",
            "  shadow_mode: over-limit answers are reported as OK",
            "  policy 1: 5 per second, fixed_window, name \"burst\", counter name"
                + " \"envoy:4:edge/12:header_match=3:api/4:path=5:/v1/*|0\"",
            "    remaining 5",
            "  policy 2: 100 per 5 minutes, token_bucket, counter name"
                + " \"envoy:4:edge/12:header_match=3:api/4:path=5:/v1/*|1\"",
            "    remaining 100");
    assertThat(asked).extracting(RateLimitRequest::hits).containsExactly(0L, 0L);
    assertThat(asked).extracting(RateLimitRequest::duration).containsExactly(1000L, 300_000L);
  }

  @Test
  void explain_noMatch_showsWhereItStoppedAndTheCandidatesThere() throws Exception {
    List<String> lines =
        explainer.explain(
            config(),
            "edge",
            List.of(descriptor("header_match", "api", "path", "/v2/users")),
            r -> Optional.empty());

    assertThat(lines)
        .containsExactly(
            "descriptor 1: header_match=api, path=/v2/users",
            "  matched so far: header_match=api",
            "  no limit: no rule at this level matches path=/v2/users (at entry 2)",
            "  candidates there: path=/v1/* (edge.yaml:8, wildcard), user (edge.yaml:14, any"
                + " value)");
  }

  @Test
  void explain_replacedPolicy_saysItIsNotCountedAndAsksNothingForIt() throws Exception {
    List<RateLimitRequest> asked = new ArrayList<>();

    List<String> lines =
        explainer.explain(
            config(),
            "edge",
            List.of(descriptor("remote_address", "10.0.0.1"), descriptor("vip", "yes")),
            r -> {
              asked.add(r);
              return Optional.empty();
            });

    assertThat(lines).contains("    replaced by another matched rule: not counted");
    assertThat(asked).extracting(RateLimitRequest::limit).containsExactly(1L);
  }

  @Test
  void explain_limitOverride_explainsTheOverrideCounterCheckedWithZeroHits()
      throws Exception {
    List<RateLimitRequest> asked = new ArrayList<>();
    RateLimitDescriptor descriptor =
        RateLimitDescriptor.newBuilder()
            .addEntries(
                RateLimitDescriptor.Entry.newBuilder().setKey("remote_address").setValue("10.0.0.1"))
            .setLimit(
                RateLimitDescriptor.RateLimitOverride.newBuilder()
                    .setRequestsPerUnit(1000)
                    .setUnit(RateLimitUnit.HOUR))
            .setHitsAddend(UInt64Value.of(7))
            .build();

    List<String> lines =
        explainer.explain(
            config(),
            "edge",
            List.of(descriptor),
            r -> {
              asked.add(r);
              return Optional.empty();
            });

    assertThat(lines)
        .containsExactly(
            "descriptor 1: remote_address=10.0.0.1",
            "  limit override: 1000 per hour, from the descriptor's limit; rules are not matched",
            "  counter: unique_key \"14:remote_address=8:10.0.0.1\"",
            "  policy 1: 1000 per hour, fixed_window, limit override, counter name"
                + " \"envoy-override:4:edge/HOUR\"");
    assertThat(asked).extracting(RateLimitRequest::hits).containsExactly(0L);
    assertThat(asked).extracting(RateLimitRequest::duration).containsExactly(3_600_000L);
  }

  @Test
  void explain_overrideWithoutAUnit_answeredOverLimitWithoutCounting()
      throws Exception {
    RateLimitDescriptor descriptor =
        RateLimitDescriptor.newBuilder()
            .addEntries(RateLimitDescriptor.Entry.newBuilder().setKey("a").setValue("b"))
            .setLimit(RateLimitDescriptor.RateLimitOverride.newBuilder().setRequestsPerUnit(5))
            .build();

    assertThat(
            explainer.explain(
                config(), "edge", List.of(descriptor), r -> Optional.of("asked")))
        .containsExactly(
            "descriptor 1: a=b",
            "  answered OVER_LIMIT without counting: a limit override without a valid unit or"
                + " without entries");
  }

  @Test
  void explain_unknownDomain_saysNothingIsLimitedAndListsTheDomains() throws Exception {
    assertThat(explainer.explain(config(), "edg", List.of(descriptor("a", "b")), r -> Optional.empty()))
        .containsExactly("domain 'edg' is not in the config, so nothing is limited; domains: edge");
  }

  @Test
  void policyText_calendarWindow_namesTheIntervalAndZone() {
    dev.weir.envoy.config.RateLimitRule rule =
        new dev.weir.envoy.config.RateLimitRule(
            100,
            io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit.MONTH,
            false,
            "",
            List.of(),
            dev.weir.core.model.Algorithm.FIXED_WINDOW,
            0,
            0,
            1,
            Optional.of(
                new dev.weir.envoy.config.CalendarWindow(
                    dev.weir.core.model.GregorianInterval.MONTHS,
                    java.time.ZoneId.of("Europe/Berlin"))));

    assertThat(Explainer.policyText(rule))
        .isEqualTo("100 per calendar month in Europe/Berlin, fixed_window");
  }
}
