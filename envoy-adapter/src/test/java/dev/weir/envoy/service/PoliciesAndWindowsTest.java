package dev.weir.envoy.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.LocalRateLimitService;
import dev.weir.core.testkit.RecordingMetrics;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.testkit.RateLimitFieldsSyntax;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Several policies on one descriptor ({@code rate_limits}) and windows of any length ({@code
 * unit_multiplier}), answered over the real local engine and store.
 */
class PoliciesAndWindowsTest {

  private static final String YAML =
      """
      domain: acct
      descriptors:
        - key: account_id
          rate_limits:
            - unit: second
              requests_per_unit: 3
              name: burst
            - unit: minute
              requests_per_unit: 5
              name: sustained
        - key: ip
          rate_limit:
            unit: minute
            unit_multiplier: 5
            requests_per_unit: 2
        - key: vip
          rate_limit:
            unit: minute
            requests_per_unit: 100
            replaces: [{name: burst}]
      """;

  // 2026-01-01T00:02:30Z: two and a half minutes into a 5-minute window aligned to the epoch.
  private final FakeClock clock = new FakeClock(1_767_225_600_000L + 150_000);
  private final InMemoryBucketStore store = new InMemoryBucketStore(clock);
  private final RecordingMetrics checks = new RecordingMetrics();
  private ShouldRateLimitHandler handler;

  private void start(Map<String, String> env) throws Exception {
    EnvoySettings settings = EnvoySettings.fromEnvironment(env);
    ConfigHolder config = new ConfigHolder();
    config.set(
        new ConfigLoader(settings.loadOptions()).compile(List.of(new ConfigFile("a.yaml", YAML))));
    handler =
        new ShouldRateLimitHandler(
            config,
            new LocalRateLimitService(
                new LocalLimiter(new RateLimitEngine(ZoneOffset.UTC), store, clock), "a:1"),
            clock,
            settings,
            new EnvoyMetrics(new SimpleMeterRegistry()),
            InputLimits.DEFAULTS,
            new CheckMeter(checks));
  }

  private static RateLimitDescriptor descriptor(String key, String value) {
    return RateLimitDescriptor.newBuilder()
        .addEntries(RateLimitDescriptor.Entry.newBuilder().setKey(key).setValue(value))
        .build();
  }

  private RateLimitResponse call(RateLimitDescriptor... descriptors) {
    return handler
        .decide(
            RateLimitRequest.newBuilder()
                .setDomain("acct")
                .addAllDescriptors(List.of(descriptors))
                .build())
        .join();
  }

  @Test
  void rateLimits_overWhenAnyPolicyIs_statusNamesTheDecidingPolicy() throws Exception {
    start(Map.of());
    List<DescriptorStatus> statuses = new ArrayList<>();
    for (int second = 0; second < 3; second++) {
      for (int i = 0; i < 3; i++) {
        statuses.add(call(descriptor("account_id", "42")).getStatuses(0));
      }
      clock.advanceMillis(1000);
    }

    assertThat(statuses)
        .extracting(DescriptorStatus::getCode)
        .containsExactly(
            Code.OK, Code.OK, Code.OK, Code.OK, Code.OK, Code.OVER_LIMIT,
            Code.OVER_LIMIT, Code.OVER_LIMIT, Code.OVER_LIMIT);
    assertThat(statuses)
        .extracting(s -> s.getCurrentLimit().getName())
        .containsExactly(
            "burst", "burst", "burst", "sustained", "sustained", "sustained",
            "sustained", "sustained", "sustained");
    assertThat(statuses.get(0).getLimitRemaining()).isEqualTo(2);
    assertThat(statuses.get(3).getLimitRemaining()).isEqualTo(1);
    assertThat(statuses.get(3).getCurrentLimit().getUnit()).isEqualTo(Unit.MINUTE);
    assertThat(store.size()).isEqualTo(2);
  }

  @Test
  void rateLimits_firstPolicyOver_descriptorCountedOnceAsOverLimit() throws Exception {
    start(Map.of());
    for (int i = 0; i < 3; i++) {
      call(descriptor("account_id", "42"));
    }
    int before = checks.events().size();

    call(descriptor("account_id", "42"));

    assertThat(checks.events().subList(before, checks.events().size()))
        .containsExactly("checked over_limit");
  }

  @Test
  void rateLimits_stoppingIncrementsFirstPolicyOver_descriptorCountedOnceAsOverLimit()
      throws Exception {
    start(Map.of("WEIR_ENVOY_STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "true"));
    for (int i = 0; i < 3; i++) {
      call(descriptor("account_id", "42"));
    }
    int before = checks.events().size();

    call(descriptor("account_id", "42"), descriptor("ip", "1.2.3.4"));

    assertThat(checks.events().subList(before, checks.events().size()))
        .containsExactlyInAnyOrder("checked over_limit", "checked under_limit");
  }

  @Test
  void rateLimits_headersFollowTheDecidingPolicy() throws Exception {
    start(Map.of("WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_ENABLED", "true"));
    call(descriptor("account_id", "42"));
    call(descriptor("account_id", "42"));

    RateLimitResponse third = call(descriptor("account_id", "42"));

    assertThat(third.getResponseHeadersToAddList())
        .extracting(HeaderValue::getKey, HeaderValue::getValue)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("RateLimit-Limit", "3"),
            org.assertj.core.groups.Tuple.tuple("RateLimit-Remaining", "0"),
            org.assertj.core.groups.Tuple.tuple("RateLimit-Reset", "1"));
  }

  private static Map<String, String> ietf() {
    return Map.of(
        "WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_ENABLED", "true",
        "WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_FORMAT", "ietf");
  }

  private static String field(RateLimitResponse response, String name) {
    return response.getResponseHeadersToAddList().stream()
        .filter(h -> h.getKey().equals(name))
        .map(HeaderValue::getValue)
        .reduce((a, b) -> a + " | " + b)
        .orElseThrow(() -> new AssertionError("no " + name + " header"));
  }

  @Test
  void ietfHeaders_everyMatchedPolicyListed_rateLimitNamesTheLeastRemaining() throws Exception {
    start(ietf());

    RateLimitResponse first = call(descriptor("account_id", "42"), descriptor("ip", "10.0.0.1"));

    assertThat(first.getResponseHeadersToAddList())
        .extracting(HeaderValue::getKey)
        .containsExactly("RateLimit-Policy", "RateLimit");
    assertThat(RateLimitFieldsSyntax.policy(field(first, "RateLimit-Policy")))
        .extracting(Object::toString)
        .containsExactly("burst;q=3;w=1", "sustained;q=5;w=60", "ip;q=2;w=300");
    assertThat(RateLimitFieldsSyntax.limit(field(first, "RateLimit")))
        .extracting(Object::toString)
        .containsExactly("ip;r=1;t=150");
  }

  @Test
  void ietfHeaders_overLimit_rateLimitNamesTheOverLimitPolicyWithZeroRemaining() throws Exception {
    start(ietf());
    for (int i = 0; i < 3; i++) {
      call(descriptor("account_id", "42"));
    }
    clock.advanceMillis(1000);
    call(descriptor("account_id", "42"));
    call(descriptor("account_id", "42"));

    RateLimitResponse over = call(descriptor("account_id", "42"), descriptor("ip", "10.0.0.1"));

    assertThat(over.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(RateLimitFieldsSyntax.limit(field(over, "RateLimit")))
        .extracting(Object::toString)
        .containsExactly("sustained;r=0;t=29");
    assertThat(field(over, "RateLimit-Policy"))
        .isEqualTo("\"burst\";q=3;w=1, \"sustained\";q=5;w=60, \"ip\";q=2;w=300");
  }

  @Test
  void ietfHeaders_sameRuleMatchedTwice_listedOnce() throws Exception {
    start(ietf());

    RateLimitResponse response = call(descriptor("ip", "10.0.0.1"), descriptor("ip", "10.0.0.2"));

    assertThat(RateLimitFieldsSyntax.policy(field(response, "RateLimit-Policy")))
        .extracting(Object::toString)
        .containsExactly("ip;q=2;w=300");
  }

  @Test
  void ietfHeaders_headersDisabled_noneAdded() throws Exception {
    start(Map.of("WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_FORMAT", "ietf"));

    assertThat(call(descriptor("ip", "10.0.0.1")).getResponseHeadersToAddList()).isEmpty();
  }

  @Test
  void rateLimits_stopIncrementWhenOverLimit_policiesNotOverKeepTheirCount() throws Exception {
    start(Map.of("WEIR_ENVOY_STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "true"));
    for (int i = 0; i < 3; i++) {
      call(descriptor("account_id", "42"));
    }

    RateLimitResponse fourth = call(descriptor("account_id", "42"));
    clock.advanceMillis(1000);
    RateLimitResponse nextSecond = call(descriptor("account_id", "42"));

    assertThat(fourth.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(fourth.getStatuses(0).getCurrentLimit().getName()).isEqualTo("burst");
    assertThat(nextSecond.getOverallCode()).isEqualTo(Code.OK);
    assertThat(nextSecond.getStatuses(0).getCurrentLimit().getName()).isEqualTo("sustained");
    assertThat(nextSecond.getStatuses(0).getLimitRemaining()).isEqualTo(1);
  }

  @Test
  void replaces_dropsOnlyTheNamedPolicy() throws Exception {
    start(Map.of());
    for (int i = 0; i < 4; i++) {
      call(descriptor("account_id", "42"), descriptor("vip", "yes"));
    }

    RateLimitResponse fifth = call(descriptor("account_id", "42"), descriptor("vip", "yes"));

    assertThat(fifth.getStatuses(0).getCode()).isEqualTo(Code.OK);
    assertThat(fifth.getStatuses(0).getCurrentLimit().getName()).isEqualTo("sustained");
    assertThat(fifth.getStatuses(0).getLimitRemaining()).isZero();
  }

  @Test
  void unitMultiplier_fiveMinuteWindowAlignedToTheEpoch_resetTellsTheTrueRemainingTime()
      throws Exception {
    start(Map.of());

    DescriptorStatus first = call(descriptor("ip", "10.0.0.1")).getStatuses(0);
    clock.advanceMillis(60_000);
    DescriptorStatus second = call(descriptor("ip", "10.0.0.1")).getStatuses(0);
    DescriptorStatus third = call(descriptor("ip", "10.0.0.1")).getStatuses(0);
    clock.advanceMillis(90_000);
    DescriptorStatus nextWindow = call(descriptor("ip", "10.0.0.1")).getStatuses(0);

    assertThat(first.getCode()).isEqualTo(Code.OK);
    assertThat(first.getDurationUntilReset().getSeconds()).isEqualTo(150);
    assertThat(first.getCurrentLimit().getUnit()).isEqualTo(Unit.MINUTE);
    assertThat(second.getCode()).isEqualTo(Code.OK);
    assertThat(second.getDurationUntilReset().getSeconds()).isEqualTo(90);
    assertThat(third.getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(nextWindow.getCode()).isEqualTo(Code.OK);
    assertThat(nextWindow.getDurationUntilReset().getSeconds()).isEqualTo(300);
  }
}
