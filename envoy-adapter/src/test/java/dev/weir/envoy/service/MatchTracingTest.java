package dev.weir.envoy.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.limiter.InputLimits;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.toplimited.OverLimitRecorder;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.metrics.EnvoyMetrics;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What {@code ShouldRateLimit} tells its {@link MatchTracing}: one span per call, started with the
 * domain and descriptor count, naming each rule that counts a descriptor after {@code replaces},
 * ended before the counters are checked, and never a descriptor's value; then each rule over its
 * limit (with its shadow mode) and, once, whether global shadow mode answered the call OK.
 */
class MatchTracingTest {

  private static final String YAML =
      """
      domain: shop
      descriptors:
        - key: remote_address
          rate_limit: {unit: minute, requests_per_unit: 2, name: per-ip}
        - key: internal
          rate_limit:
            unlimited: true
        - key: vip
          rate_limit:
            unit: minute
            requests_per_unit: 100
            replaces: [{name: per-ip}]
        - key: path
          descriptors:
            - key: user
              rate_limit: {unit: hour, requests_per_unit: 1}
        - key: beta
          shadow_mode: true
          rate_limit: {unit: minute, requests_per_unit: 1, name: beta-trial}
      """;

  private static final String SECRET = "secret-value-";

  /** One recorded span: what it was started with, what it matched, and when it ended. */
  private static final class Recorded implements MatchTracing.Span {
    final String domain;
    final int descriptors;
    final List<String> rules = new ArrayList<>();
    final List<String> overLimit = new ArrayList<>();
    final List<Boolean> answered = new ArrayList<>();
    int ended;
    int checksWhenEnded = -1;
    private final RecordingRateLimitService service;

    Recorded(String domain, int descriptors, RecordingRateLimitService service) {
      this.domain = domain;
      this.descriptors = descriptors;
      this.service = service;
    }

    @Override
    public void matched(String rule) {
      rules.add(rule);
    }

    @Override
    public void end() {
      ended++;
      checksWhenEnded = service.calls().size();
    }

    @Override
    public void overLimit(String rule, boolean shadowed) {
      assertThat(ended).as("over-limit rules are told after the match ends").isEqualTo(1);
      overLimit.add(rule + (shadowed ? " (shadow)" : ""));
    }

    @Override
    public void answered(boolean globallyShadowed) {
      answered.add(globallyShadowed);
    }
  }

  private final FakeClock clock = new FakeClock();
  private final RecordingRateLimitService service = new RecordingRateLimitService(clock);
  private final List<Recorded> spans = new ArrayList<>();
  private ShouldRateLimitHandler handler;

  @BeforeEach
  void start() throws Exception {
    start(Map.of());
  }

  private void start(Map<String, String> environment) throws Exception {
    spans.clear();
    EnvoySettings settings = EnvoySettings.fromEnvironment(environment);
    ConfigHolder holder =
        new ConfigHolder(
            new ConfigLoader(settings.loadOptions())
                .compile(List.of(new ConfigFile("shop.yaml", YAML))));
    handler =
        new ShouldRateLimitHandler(
            holder,
            service,
            clock,
            settings,
            new EnvoyMetrics(new SimpleMeterRegistry()),
            InputLimits.DEFAULTS,
            CheckMeter.NOOP,
            OverLimitRecorder.NOOP,
            (domain, descriptors) -> {
              Recorded span = new Recorded(domain, descriptors, service);
              spans.add(span);
              return span;
            });
  }

  private RateLimitResponse call(String domain, String... keyValues) {
    RateLimitRequest.Builder request = RateLimitRequest.newBuilder().setDomain(domain);
    for (int i = 0; i < keyValues.length; i += 2) {
      request.addDescriptors(
          RateLimitDescriptor.newBuilder()
              .addEntries(
                  RateLimitDescriptor.Entry.newBuilder()
                      .setKey(keyValues[i])
                      .setValue(keyValues[i + 1])));
    }
    return handler.decide(request.build()).join();
  }

  /** A call for domain {@code shop} with one descriptor {@code path}, {@code user}, both secret. */
  private static RateLimitRequest pathAndUser() {
    return RateLimitRequest.newBuilder()
        .setDomain("shop")
        .addDescriptors(
            RateLimitDescriptor.newBuilder()
                .addEntries(RateLimitDescriptor.Entry.newBuilder().setKey("path").setValue(SECRET))
                .addEntries(RateLimitDescriptor.Entry.newBuilder().setKey("user").setValue(SECRET)))
        .build();
  }

  @Test
  void match_namesEachCountingRuleByNameElsePath_endedBeforeTheCountersAreChecked() {
    call("shop", "remote_address", SECRET + 1, "internal", SECRET + 2, "nomatch", SECRET + 3);

    assertThat(spans).hasSize(1);
    Recorded span = spans.get(0);
    assertThat(span.domain).isEqualTo("shop");
    assertThat(span.descriptors).isEqualTo(3);
    assertThat(span.rules).containsExactly("per-ip", "internal");
    assertThat(span.ended).isEqualTo(1);
    assertThat(span.checksWhenEnded).isZero();
    assertThat(service.calls()).hasSize(1);
  }

  @Test
  void match_replacedRule_notNamed() {
    call("shop", "remote_address", SECRET + 1, "vip", SECRET + 2);

    assertThat(spans.get(0).rules).containsExactly("vip");
  }

  @Test
  void match_nestedRuleWithoutName_namedByItsPathWithoutValues() {
    RateLimitRequest request = pathAndUser();

    handler.decide(request).join();

    assertThat(spans.get(0).rules).containsExactly("path.user");
    assertThat(spans.get(0).rules).noneMatch(rule -> rule.contains(SECRET));
  }

  @Test
  void match_unknownDomain_spanWithoutRules() {
    RateLimitResponse answer = call("elsewhere", "remote_address", SECRET);

    assertThat(answer.getOverallCode()).isEqualTo(RateLimitResponse.Code.OK);
    assertThat(spans).hasSize(1);
    assertThat(spans.get(0).domain).isEqualTo("elsewhere");
    assertThat(spans.get(0).descriptors).isEqualTo(1);
    assertThat(spans.get(0).rules).isEmpty();
    assertThat(spans.get(0).ended).isEqualTo(1);
  }

  @Test
  void answer_overTheLimit_toldOncePerDescriptorByNameElsePath() {
    for (int i = 0; i < 3; i++) {
      call("shop", "remote_address", SECRET, "remote_address", SECRET);
    }
    RateLimitRequest overPath = pathAndUser();
    handler.decide(overPath).join();
    RateLimitResponse answer = handler.decide(overPath).join();

    assertThat(answer.getOverallCode()).isEqualTo(RateLimitResponse.Code.OVER_LIMIT);
    assertThat(spans.get(0).overLimit).isEmpty();
    assertThat(spans.get(1).overLimit).containsExactly("per-ip", "per-ip");
    assertThat(spans.get(4).overLimit).containsExactly("path.user");
    assertThat(spans).allSatisfy(span -> assertThat(span.answered).containsExactly(false));
  }

  @Test
  void answer_shadowRuleOverTheLimit_toldAsShadowed() {
    call("shop", "beta", SECRET);
    RateLimitResponse answer = call("shop", "beta", SECRET, "remote_address", SECRET);

    assertThat(answer.getOverallCode()).isEqualTo(RateLimitResponse.Code.OK);
    assertThat(spans.get(1).overLimit).containsExactly("beta-trial (shadow)");
    assertThat(spans.get(1).answered).containsExactly(false);
  }

  @Test
  void answer_globalShadowMode_toldWhenItTurnedOverLimitIntoOk() throws Exception {
    start(Map.of("WEIR_ENVOY_SHADOW_MODE", "true"));

    for (int i = 0; i < 3; i++) {
      call("shop", "remote_address", SECRET);
    }

    assertThat(spans.get(0).answered).containsExactly(false);
    assertThat(spans.get(2).overLimit).containsExactly("per-ip");
    assertThat(spans.get(2).answered).containsExactly(true);
  }

  @Test
  void answer_underTheLimit_noRuleOverItsLimit() {
    call("shop", "remote_address", SECRET, "internal", SECRET, "nomatch", SECRET);

    assertThat(spans.get(0).overLimit).isEmpty();
    assertThat(spans.get(0).answered).containsExactly(false);
  }
}
