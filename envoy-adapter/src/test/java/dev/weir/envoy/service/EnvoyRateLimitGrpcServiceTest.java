package dev.weir.envoy.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.UInt64Value;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.testkit.FakeClock;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.metrics.EnvoyMetrics;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.envoyproxy.envoy.type.v3.RateLimitUnit;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class EnvoyRateLimitGrpcServiceTest {

  private static final String YAML =
      """
      domain: shop
      descriptors:
        - key: remote_address
          rate_limit: {unit: minute, requests_per_unit: 2, name: per-ip}
        - key: path
          value: /admin
          rate_limit: {unit: second, requests_per_unit: 5, name: admin}
        - key: internal
          rate_limit:
            unlimited: true
        - key: vip
          rate_limit:
            unit: minute
            requests_per_unit: 100
            replaces: [{name: per-ip}]
        - key: trial
          shadow_mode: true
          rate_limit: {unit: minute, requests_per_unit: 1}
        - key: files
          value: "report*"
          share_threshold: true
          rate_limit: {unit: hour, requests_per_unit: 1}
        - key: images
          value: "*.png"
          rate_limit: {unit: hour, requests_per_unit: 1}
        - key: a
          descriptors:
            - key: b
              rate_limit: {unit: minute, requests_per_unit: 1}
        - key: a_b
          rate_limit: {unit: minute, requests_per_unit: 1}
        - key: soft
          quota_mode: true
          rate_limit: {unit: minute, requests_per_unit: 1}
        - key: blocked
          rate_limit: {unit: second, requests_per_unit: 0}
        - key: bucket
          rate_limit: {unit: minute, requests_per_unit: 2, algorithm: token_bucket}
      """;

  private final FakeClock clock = new FakeClock();
  private final RecordingRateLimitService core = new RecordingRateLimitService(clock);
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final ConfigHolder config = new ConfigHolder();
  private Server server;
  private ManagedChannel channel;
  private RateLimitServiceGrpc.RateLimitServiceBlockingStub stub;

  private void start(Map<String, String> env) throws Exception {
    Map<String, String> all = new HashMap<>(env);
    EnvoySettings settings = EnvoySettings.fromEnvironment(all);
    ShouldRateLimitHandler handler =
        new ShouldRateLimitHandler(config, core, clock, settings, new EnvoyMetrics(registry));
    String name = InProcessServerBuilder.generateName();
    server =
        InProcessServerBuilder.forName(name)
            .directExecutor()
            .addService(new EnvoyRateLimitGrpcService(handler))
            .build()
            .start();
    channel = InProcessChannelBuilder.forName(name).directExecutor().build();
    stub = RateLimitServiceGrpc.newBlockingStub(channel);
  }

  private void startWithConfig(Map<String, String> env) throws Exception {
    config.set(
        new ConfigLoader(EnvoySettings.fromEnvironment(env).loadOptions())
            .compile(List.of(new ConfigFile("shop.yaml", YAML))));
    start(env);
  }

  @AfterEach
  void stop() {
    if (channel != null) {
      channel.shutdownNow();
      server.shutdownNow();
    }
  }

  private static RateLimitDescriptor descriptor(String... keyValues) {
    RateLimitDescriptor.Builder b = RateLimitDescriptor.newBuilder();
    for (int i = 0; i < keyValues.length; i += 2) {
      b.addEntries(
          RateLimitDescriptor.Entry.newBuilder().setKey(keyValues[i]).setValue(keyValues[i + 1]));
    }
    return b.build();
  }

  private static io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest request(
      RateLimitDescriptor... descriptors) {
    return io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest.newBuilder()
        .setDomain("shop")
        .addAllDescriptors(List.of(descriptors))
        .build();
  }

  private RateLimitResponse call(RateLimitDescriptor... descriptors) {
    return stub.shouldRateLimit(request(descriptors));
  }

  private static DescriptorStatus limited(
      Code code, int rpu, Unit unit, String name, int remaining, long resetSeconds) {
    return DescriptorStatus.newBuilder()
        .setCode(code)
        .setCurrentLimit(
            RateLimitResponse.RateLimit.newBuilder()
                .setRequestsPerUnit(rpu)
                .setUnit(unit)
                .setName(name))
        .setLimitRemaining(remaining)
        .setDurationUntilReset(com.google.protobuf.Duration.newBuilder().setSeconds(resetSeconds))
        .build();
  }

  private double counter(String name, String rule) {
    var c =
        registry
            .find("weir.envoy.rate_limit." + name)
            .tag("domain", "shop")
            .tag("rule", rule)
            .counter();
    return c == null ? 0 : c.count();
  }

  @Test
  void shouldRateLimit_twoPerMinute_okOkThenOverLimitWithStatuses() throws Exception {
    startWithConfig(Map.of());
    clock.advance(Duration.ofSeconds(10));
    RateLimitDescriptor ip = descriptor("remote_address", "10.0.0.1");

    RateLimitResponse first = call(ip);
    RateLimitResponse second = call(ip);
    RateLimitResponse third = call(ip);

    assertThat(first.getOverallCode()).isEqualTo(Code.OK);
    assertThat(first.getStatusesList())
        .containsExactly(limited(Code.OK, 2, Unit.MINUTE, "per-ip", 1, 50));
    assertThat(second.getStatusesList())
        .containsExactly(limited(Code.OK, 2, Unit.MINUTE, "per-ip", 0, 50));
    assertThat(third.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(third.getStatusesList())
        .containsExactly(limited(Code.OVER_LIMIT, 2, Unit.MINUTE, "per-ip", 0, 50));
    assertThat(third.getResponseHeadersToAddList()).isEmpty();
    assertThat(counter("total_hits", "remote_address")).isEqualTo(3);
    assertThat(counter("within_limit", "remote_address")).isEqualTo(2);
    assertThat(counter("near_limit", "remote_address")).isEqualTo(1);
    assertThat(counter("over_limit", "remote_address")).isEqualTo(1);
  }

  @Test
  void shouldRateLimit_nextWindow_countsAgain() throws Exception {
    startWithConfig(Map.of());
    RateLimitDescriptor ip = descriptor("remote_address", "10.0.0.1");
    call(ip);
    call(ip);
    assertThat(call(ip).getOverallCode()).isEqualTo(Code.OVER_LIMIT);

    clock.advance(Duration.ofMinutes(1));

    assertThat(call(ip).getOverallCode()).isEqualTo(Code.OK);
  }

  @Test
  void shouldRateLimit_differentValuesOfKeyOnlyRule_countSeparately() throws Exception {
    startWithConfig(Map.of());
    call(descriptor("remote_address", "10.0.0.1"));
    call(descriptor("remote_address", "10.0.0.1"));

    RateLimitResponse other = call(descriptor("remote_address", "10.0.0.2"));

    assertThat(other.getStatuses(0).getLimitRemaining()).isEqualTo(1);
  }

  @Test
  void shouldRateLimit_headersEnabled_reportsTheLeastRemainingStatus() throws Exception {
    startWithConfig(Map.of("WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_ENABLED", "true"));
    clock.advance(Duration.ofSeconds(2));

    RateLimitResponse response =
        call(descriptor("path", "/admin"), descriptor("remote_address", "10.0.0.1"));

    assertThat(response.getResponseHeadersToAddList())
        .containsExactly(
            HeaderValue.newBuilder().setKey("RateLimit-Limit").setValue("2").build(),
            HeaderValue.newBuilder().setKey("RateLimit-Remaining").setValue("1").build(),
            HeaderValue.newBuilder().setKey("RateLimit-Reset").setValue("58").build());
  }

  @Test
  void shouldRateLimit_midSecond_durationUntilResetRoundsUpToWholeSecondsLikeResetHeader()
      throws Exception {
    startWithConfig(Map.of("WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_ENABLED", "true"));
    clock.advance(Duration.ofMillis(10_300));

    RateLimitResponse response = call(descriptor("remote_address", "10.0.0.1"));

    assertThat(response.getStatuses(0).getDurationUntilReset())
        .isEqualTo(com.google.protobuf.Duration.newBuilder().setSeconds(50).build());
    assertThat(response.getResponseHeadersToAddList())
        .contains(HeaderValue.newBuilder().setKey("RateLimit-Reset").setValue("50").build());
  }

  @Test
  void shouldRateLimit_lastSecondOfWindow_durationUntilResetIsOneSecondNotZero() throws Exception {
    startWithConfig(Map.of());
    clock.advance(Duration.ofMillis(59_400));

    RateLimitResponse response = call(descriptor("remote_address", "10.0.0.1"));

    assertThat(response.getStatuses(0).getDurationUntilReset())
        .isEqualTo(com.google.protobuf.Duration.newBuilder().setSeconds(1).build());
  }

  @Test
  void shouldRateLimit_headersEnabledAndOverLimit_overLimitStatusWinsWithRenamedHeaders()
      throws Exception {
    startWithConfig(
        Map.of(
            "WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_ENABLED", "true",
            "WEIR_ENVOY_LIMIT_LIMIT_HEADER", "X-Limit",
            "WEIR_ENVOY_LIMIT_REMAINING_HEADER", "X-Remaining",
            "WEIR_ENVOY_LIMIT_RESET_HEADER", "X-Reset"));
    clock.advance(Duration.ofMillis(500));
    call(descriptor("files", "report-1"));

    RateLimitResponse response =
        call(descriptor("remote_address", "10.0.0.1"), descriptor("files", "report-2"));

    assertThat(response.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(response.getResponseHeadersToAddList())
        .extracting(h -> h.getKey() + "=" + h.getValue())
        .containsExactly("X-Limit=1", "X-Remaining=0", "X-Reset=3600");
  }

  @Test
  void shouldRateLimit_descriptorHitsAddendZero_checksWithoutConsuming() throws Exception {
    startWithConfig(Map.of());
    RateLimitDescriptor check =
        descriptor("remote_address", "10.0.0.1").toBuilder()
            .setHitsAddend(UInt64Value.of(0))
            .build();

    call(check);
    call(check);
    RateLimitResponse response = call(check);

    assertThat(response.getOverallCode()).isEqualTo(Code.OK);
    assertThat(response.getStatuses(0).getLimitRemaining()).isEqualTo(2);
    assertThat(counter("total_hits", "remote_address")).isZero();
  }

  @Test
  void shouldRateLimit_requestHitsAddend_zeroMeansOneAndLargerConsumesMore() throws Exception {
    startWithConfig(Map.of());
    RateLimitDescriptor admin = descriptor("path", "/admin");

    RateLimitResponse zero =
        stub.shouldRateLimit(request(admin).toBuilder().setHitsAddend(0).build());
    RateLimitResponse three =
        stub.shouldRateLimit(request(admin).toBuilder().setHitsAddend(3).build());
    RateLimitResponse overridden =
        stub.shouldRateLimit(
            request(admin.toBuilder().setHitsAddend(UInt64Value.of(1)).build()).toBuilder()
                .setHitsAddend(100)
                .build());

    assertThat(zero.getStatuses(0).getLimitRemaining()).isEqualTo(4);
    assertThat(three.getStatuses(0).getLimitRemaining()).isEqualTo(1);
    assertThat(overridden.getStatuses(0).getLimitRemaining()).isZero();
    assertThat(overridden.getOverallCode()).isEqualTo(Code.OK);
  }

  @Test
  void shouldRateLimit_limitOverride_skipsMatchingAndAppliesTheOverride() throws Exception {
    startWithConfig(Map.of());
    RateLimitDescriptor override =
        descriptor("unconfigured", "x").toBuilder()
            .setLimit(
                RateLimitDescriptor.RateLimitOverride.newBuilder()
                    .setRequestsPerUnit(1)
                    .setUnit(RateLimitUnit.HOUR))
            .build();

    RateLimitResponse first = call(override);
    RateLimitResponse second = call(override);

    assertThat(first.getStatusesList())
        .containsExactly(limited(Code.OK, 1, Unit.HOUR, "", 0, 3600));
    assertThat(second.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(counter("over_limit", "limit_override.unconfigured")).isEqualTo(1);
  }

  @Test
  void shouldRateLimit_limitOverridesWithDifferentValues_shareOneMeterSet() throws Exception {
    startWithConfig(Map.of());
    RateLimitDescriptor.RateLimitOverride limit =
        RateLimitDescriptor.RateLimitOverride.newBuilder()
            .setRequestsPerUnit(10)
            .setUnit(RateLimitUnit.HOUR)
            .build();

    call(descriptor("user", "alice", "path", "/a").toBuilder().setLimit(limit).build());
    call(descriptor("user", "bob", "path", "/b").toBuilder().setLimit(limit).build());

    assertThat(registry.find("weir.envoy.rate_limit.total_hits").counters())
        .singleElement()
        .satisfies(
            c -> {
              assertThat(c.getId().getTag("domain")).isEqualTo("shop");
              assertThat(c.getId().getTag("rule")).isEqualTo("limit_override.user.path");
              assertThat(c.count()).isEqualTo(2);
            });
    assertThat(registry.getMeters()).noneMatch(m -> m.getId().toString().contains("alice"));
  }

  @Test
  void shouldRateLimit_limitOverrideForUnknownDomain_isNotLimited() throws Exception {
    startWithConfig(Map.of());
    RateLimitDescriptor override =
        descriptor("k", "v").toBuilder()
            .setLimit(
                RateLimitDescriptor.RateLimitOverride.newBuilder()
                    .setRequestsPerUnit(0)
                    .setUnit(RateLimitUnit.HOUR))
            .build();

    RateLimitResponse response =
        stub.shouldRateLimit(request(override).toBuilder().setDomain("elsewhere").build());

    assertThat(response.getOverallCode()).isEqualTo(Code.OK);
    assertThat(response.getStatuses(0).hasCurrentLimit()).isFalse();
    assertThat(core.calls()).isEmpty();
  }

  @Test
  void shouldRateLimit_unknownDomain_okAndCountedInDomainNotFound() throws Exception {
    startWithConfig(Map.of());

    RateLimitResponse unknown =
        stub.shouldRateLimit(
            request(descriptor("remote_address", "10.0.0.1")).toBuilder()
                .setDomain("shopp")
                .build());
    call(descriptor("remote_address", "10.0.0.1"));

    assertThat(unknown.getOverallCode()).isEqualTo(Code.OK);
    assertThat(unknown.getStatuses(0).hasCurrentLimit()).isFalse();
    assertThat(registry.get("weir.envoy.domain_not_found").counter().count()).isEqualTo(1);
  }

  @Test
  void shouldRateLimit_limitOverrideWithoutUnit_thatDescriptorOverLimitOthersCounted()
      throws Exception {
    startWithConfig(Map.of());
    RateLimitDescriptor override =
        descriptor("k", "v").toBuilder()
            .setLimit(RateLimitDescriptor.RateLimitOverride.newBuilder().setRequestsPerUnit(1))
            .build();

    RateLimitResponse response = call(descriptor("remote_address", "10.0.0.1"), override);

    assertThat(response.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(response.getStatuses(0).getCode()).isEqualTo(Code.OK);
    assertThat(response.getStatuses(1).getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(response.getStatuses(1).hasCurrentLimit()).isFalse();
    assertThat(core.calls()).hasSize(1);
    assertThat(core.calls().get(0)).hasSize(1);
  }

  @Test
  void shouldRateLimit_unlimitedAndNoMatch_okWithoutCurrentLimit() throws Exception {
    startWithConfig(Map.of());

    RateLimitResponse response = call(descriptor("internal", "svc"), descriptor("nothing", "here"));

    assertThat(response.getOverallCode()).isEqualTo(Code.OK);
    assertThat(response.getStatusesList())
        .containsExactly(
            DescriptorStatus.newBuilder().setCode(Code.OK).setLimitRemaining(-1).build(),
            DescriptorStatus.newBuilder().setCode(Code.OK).build());
    assertThat(Integer.toUnsignedLong(response.getStatuses(0).getLimitRemaining()))
        .isEqualTo(4_294_967_295L);
    assertThat(core.calls()).isEmpty();
  }

  @Test
  void shouldRateLimit_replaces_dropsTheReplacedRule() throws Exception {
    startWithConfig(Map.of());
    call(descriptor("remote_address", "10.0.0.1"));
    call(descriptor("remote_address", "10.0.0.1"));

    RateLimitResponse response =
        call(descriptor("remote_address", "10.0.0.1"), descriptor("vip", "gold"));

    assertThat(response.getOverallCode()).isEqualTo(Code.OK);
    assertThat(response.getStatuses(0))
        .isEqualTo(DescriptorStatus.newBuilder().setCode(Code.OK).build());
    assertThat(response.getStatuses(1).getLimitRemaining()).isEqualTo(99);
    assertThat(core.calls().get(core.calls().size() - 1)).hasSize(1);
  }

  @Test
  void shouldRateLimit_shadowRule_reportsOkButCountsShadow() throws Exception {
    startWithConfig(Map.of());
    call(descriptor("trial", "t"));

    RateLimitResponse response = call(descriptor("trial", "t"));

    assertThat(response.getOverallCode()).isEqualTo(Code.OK);
    assertThat(response.getStatuses(0).getCode()).isEqualTo(Code.OK);
    assertThat(response.getStatuses(0).getLimitRemaining()).isZero();
    assertThat(counter("shadow_mode", "trial")).isEqualTo(1);
    assertThat(counter("over_limit", "trial")).isEqualTo(1);
  }

  @Test
  void shouldRateLimit_globalShadowMode_overallOkWhileStatusesKeepTheTruth() throws Exception {
    startWithConfig(Map.of("WEIR_ENVOY_SHADOW_MODE", "true"));
    call(descriptor("images", "a.png"));

    RateLimitResponse response = call(descriptor("images", "a.png"));

    assertThat(response.getOverallCode()).isEqualTo(Code.OK);
    assertThat(response.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(registry.counter("weir.envoy.global_shadow_mode").count()).isEqualTo(1);
  }

  @Test
  void shouldRateLimit_shareThresholdWildcard_allMatchingValuesShareOneCounter() throws Exception {
    startWithConfig(Map.of());
    call(descriptor("files", "report-1"));

    RateLimitResponse response = call(descriptor("files", "report-2"));

    assertThat(response.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(counter("over_limit", "files_report*")).isEqualTo(1);
  }

  @Test
  void shouldRateLimit_plainWildcard_countsEachValueSeparately() throws Exception {
    startWithConfig(Map.of());
    call(descriptor("images", "a.png"));

    RateLimitResponse other = call(descriptor("images", "b.png"));
    RateLimitResponse nonMatching = call(descriptor("images", "b.gif"));

    assertThat(other.getOverallCode()).isEqualTo(Code.OK);
    assertThat(nonMatching.getStatuses(0).hasCurrentLimit()).isFalse();
  }

  @Test
  void shouldRateLimit_descriptorsThatUnderscoreJoinAlike_neverShareACounter() throws Exception {
    startWithConfig(Map.of());
    call(descriptor("a", "x_b", "b", "y"));

    RateLimitResponse response = call(descriptor("a", "x", "b", "b_y"));

    assertThat(response.getOverallCode()).isEqualTo(Code.OK);
    assertThat(core.calls().get(0).get(0).name()).isEqualTo(core.calls().get(1).get(0).name());
    assertThat(core.calls().get(0).get(0).uniqueKey())
        .isNotEqualTo(core.calls().get(1).get(0).uniqueKey());
  }

  @Test
  void shouldRateLimit_everyQuotaModeRuleOver_overallOverLimit() throws Exception {
    startWithConfig(Map.of());
    call(descriptor("soft", "s"));

    RateLimitResponse withinOther =
        call(descriptor("soft", "s"), descriptor("remote_address", "10.0.0.9"));

    assertThat(withinOther.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(withinOther.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
  }

  @Test
  void shouldRateLimit_emptyDomain_invalidArgument() throws Exception {
    startWithConfig(Map.of());

    assertThatThrownBy(
            () ->
                stub.shouldRateLimit(
                    request(descriptor("k", "v")).toBuilder().setDomain("").build()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
              assertThat(e.getStatus().getDescription())
                  .isEqualTo("rate limit domain must not be empty");
            });
  }

  @Test
  void shouldRateLimit_noDescriptors_invalidArgument() throws Exception {
    startWithConfig(Map.of());

    assertThatThrownBy(() -> call())
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
              assertThat(e.getStatus().getDescription())
                  .isEqualTo("rate limit descriptor list must not be empty");
            });
  }

  @Test
  void shouldRateLimit_noConfigLoaded_unavailable() throws Exception {
    start(Map.of());

    assertThatThrownBy(() -> call(descriptor("k", "v")))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
              assertThat(e.getStatus().getDescription())
                  .isEqualTo("no rate limit configuration loaded");
            });
  }

  @Test
  void shouldRateLimit_coreItemError_unavailableWithTheMessage() throws Exception {
    startWithConfig(Map.of());
    core.failItemsWith("peer 10.0.0.2:1051 unreachable");

    assertThatThrownBy(() -> call(descriptor("remote_address", "1")))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
              assertThat(e.getStatus().getDescription())
                  .isEqualTo("peer 10.0.0.2:1051 unreachable");
            });
    assertThat(registry.counter("weir.envoy.service_error").count()).isEqualTo(1);
  }

  @Test
  void shouldRateLimit_itemErrorUnderGlobalShadowWithAnotherDescriptorOver_okAndStatusUnknown()
      throws Exception {
    startWithConfig(Map.of("WEIR_ENVOY_SHADOW_MODE", "true"));
    call(descriptor("remote_address", "10.0.0.1"));
    call(descriptor("remote_address", "10.0.0.1"));
    core.failItemsWith("peer 10.0.0.2:1051 unreachable", r -> r.uniqueKey().contains("/admin"));

    RateLimitResponse response =
        call(descriptor("remote_address", "10.0.0.1"), descriptor("path", "/admin"));

    assertThat(response.getOverallCode()).isEqualTo(Code.OK);
    assertThat(response.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(response.getStatuses(1).getCode()).isEqualTo(Code.UNKNOWN);
    assertThat(registry.counter("weir.envoy.global_shadow_mode").count()).isEqualTo(1);
    assertThat(registry.counter("weir.envoy.service_error").count()).isZero();
  }

  @Test
  void shouldRateLimit_itemErrorOfAShadowRule_okAndStatusUnknown() throws Exception {
    startWithConfig(Map.of());
    core.failItemsWith("peer 10.0.0.2:1051 unreachable", r -> r.uniqueKey().contains("trial"));

    RateLimitResponse response =
        call(descriptor("remote_address", "10.0.0.1"), descriptor("trial", "t"));

    assertThat(response.getOverallCode()).isEqualTo(Code.OK);
    assertThat(response.getStatuses(0).getCode()).isEqualTo(Code.OK);
    assertThat(response.getStatuses(0).getLimitRemaining()).isEqualTo(1);
    assertThat(response.getStatuses(1).getCode()).isEqualTo(Code.UNKNOWN);
  }

  @Test
  void shouldRateLimit_itemErrorThatDecidesTheAnswer_unavailableCountingNoAnswer()
      throws Exception {
    startWithConfig(Map.of("WEIR_ENVOY_SHADOW_MODE", "true"));
    core.failItemsWith("peer 10.0.0.2:1051 unreachable", r -> r.uniqueKey().contains("/admin"));

    assertThatThrownBy(
            () -> call(descriptor("remote_address", "10.0.0.1"), descriptor("path", "/admin")))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE));
    assertThat(counter("total_hits", "remote_address"))
        .as("hits of an answer that is never sent")
        .isZero();
  }

  @Test
  void shouldRateLimit_itemErrorsOfAQuotaAndANormalRule_unavailableNamingTheNormalOne()
      throws Exception {
    startWithConfig(Map.of());
    Map<java.util.function.Predicate<RateLimitRequest>, String> errors = new LinkedHashMap<>();
    errors.put(r -> r.uniqueKey().contains("quota-failing"), "peer 10.0.0.2:1051 unreachable");
    errors.put(r -> r.uniqueKey().contains("/admin"), "peer 10.0.0.3:1051 unreachable");
    core.failItemsWith(errors);

    assertThatThrownBy(
            () ->
                call(
                    descriptor("soft", "quota-failing"),
                    descriptor("soft", "quota-under"),
                    descriptor("path", "/admin")))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
              assertThat(e.getStatus().getDescription())
                  .as("the error of the only failed descriptor that could change the code")
                  .isEqualTo("peer 10.0.0.3:1051 unreachable");
            });
  }

  @Test
  void shouldRateLimit_stopIncrementWhenOverLimit_leavesOtherCountersUntouched() throws Exception {
    startWithConfig(Map.of("WEIR_ENVOY_STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "true"));
    call(descriptor("images", "a.png"));

    RateLimitResponse over =
        call(descriptor("remote_address", "10.0.0.1"), descriptor("images", "a.png"));
    RateLimitResponse after = call(descriptor("remote_address", "10.0.0.1"));

    assertThat(over.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(over.getStatuses(0).getLimitRemaining()).isEqualTo(2);
    assertThat(after.getStatuses(0).getLimitRemaining()).isEqualTo(1);
  }

  @Test
  void shouldRateLimit_stopIncrementWhenOverLimit_callRefusedForARefusedDescriptor_countsNothing()
      throws Exception {
    startWithConfig(Map.of("WEIR_ENVOY_STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "true"));
    RateLimitDescriptor refused =
        descriptor("remote_address", "10.0.0.2").toBuilder()
            .setLimit(RateLimitDescriptor.RateLimitOverride.newBuilder().setRequestsPerUnit(5))
            .build();

    RateLimitResponse over = call(refused, descriptor("remote_address", "10.0.0.1"));
    RateLimitResponse after = call(descriptor("remote_address", "10.0.0.1"));

    assertThat(over.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(over.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(after.getStatuses(0).getLimitRemaining())
        .as("the counter of the refused call's other descriptor, left untouched")
        .isEqualTo(1);
  }

  @Test
  void shouldRateLimit_stopIncrementWhenOverLimit_shadowRuleOverStillCountsTheAdmittedCall()
      throws Exception {
    startWithConfig(Map.of("WEIR_ENVOY_STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "true"));
    RateLimitDescriptor trial = descriptor("trial", "t");
    RateLimitDescriptor user = descriptor("remote_address", "10.0.0.9");

    RateLimitResponse first = call(trial, user);
    RateLimitResponse second = call(trial, user);
    RateLimitResponse third = call(trial, user);
    RateLimitResponse fourth = call(trial, user);

    assertThat(first.getOverallCode()).isEqualTo(Code.OK);
    assertThat(second.getOverallCode()).isEqualTo(Code.OK);
    assertThat(second.getStatuses(1).getLimitRemaining()).isZero();
    assertThat(third.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(third.getStatuses(1).getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(fourth.getStatuses(1).getCode()).isEqualTo(Code.OVER_LIMIT);
  }

  @Test
  void shouldRateLimit_stopIncrementWhenOverLimit_quotaRuleOverStillCountsTheAdmittedCall()
      throws Exception {
    startWithConfig(Map.of("WEIR_ENVOY_STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "true"));
    RateLimitDescriptor usedUp = descriptor("soft", "a");
    RateLimitDescriptor user = descriptor("remote_address", "10.0.0.9");
    call(usedUp);

    RateLimitResponse first = call(usedUp, descriptor("soft", "b1"), user);
    RateLimitResponse second = call(usedUp, descriptor("soft", "b2"), user);
    RateLimitResponse third = call(usedUp, descriptor("soft", "b3"), user);

    assertThat(first.getOverallCode()).isEqualTo(Code.OK);
    assertThat(second.getOverallCode()).isEqualTo(Code.OK);
    assertThat(second.getStatuses(2).getLimitRemaining()).isZero();
    assertThat(third.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(third.getStatuses(2).getCode()).isEqualTo(Code.OVER_LIMIT);
  }

  @Test
  void shouldRateLimit_stopIncrementWhenOverLimitUnderGlobalShadow_countsEveryCounter()
      throws Exception {
    startWithConfig(
        Map.of(
            "WEIR_ENVOY_STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "true",
            "WEIR_ENVOY_SHADOW_MODE", "true"));
    RateLimitDescriptor usedUp = descriptor("images", "a.png");
    RateLimitDescriptor user = descriptor("remote_address", "10.0.0.9");
    call(usedUp);

    call(usedUp, user);
    call(usedUp, user);
    RateLimitResponse third = call(usedUp, user);

    assertThat(third.getOverallCode()).isEqualTo(Code.OK);
    assertThat(third.getStatuses(1).getCode()).isEqualTo(Code.OVER_LIMIT);
  }

  @Test
  void shouldRateLimit_allDescriptors_goToTheCoreInOneCall() throws Exception {
    startWithConfig(Map.of());

    call(
        descriptor("remote_address", "1"),
        descriptor("nothing", "x"),
        descriptor("path", "/admin"));

    assertThat(core.calls()).hasSize(1);
    assertThat(core.calls().get(0))
        .extracting(RateLimitRequest::limit, RateLimitRequest::duration)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple(2L, 60_000L),
            org.assertj.core.groups.Tuple.tuple(5L, 1_000L));
  }

  @Test
  void shouldRateLimit_zeroRequestsPerUnit_alwaysOverLimit() throws Exception {
    startWithConfig(Map.of());

    RateLimitResponse response = call(descriptor("blocked", "x"));

    assertThat(response.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(response.getStatuses(0).getCurrentLimit().getRequestsPerUnit()).isZero();
  }

  @Test
  void shouldRateLimit_tokenBucketRule_windowStartsAtFirstHit() throws Exception {
    startWithConfig(Map.of());
    clock.advance(Duration.ofSeconds(30));
    call(descriptor("bucket", "b"));
    call(descriptor("bucket", "b"));
    clock.advance(Duration.ofSeconds(45));

    RateLimitResponse stillInWindow = call(descriptor("bucket", "b"));

    assertThat(stillInWindow.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(stillInWindow.getStatuses(0).getDurationUntilReset().getSeconds()).isEqualTo(15);
    assertThat(core.calls().get(0).get(0).algorithm())
        .isEqualTo(dev.weir.core.model.Algorithm.TOKEN_BUCKET.number());
  }
}
