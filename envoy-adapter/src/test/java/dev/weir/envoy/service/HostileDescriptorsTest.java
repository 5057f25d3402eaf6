package dev.weir.envoy.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What a client controls in a descriptor (its values, their length, the number of entries and
 * descriptors) never turns a limit off: nothing here is answered with an error, which Envoy would
 * treat as an outage and let through. Runs over the real local engine and store, so counting is
 * real.
 */
class HostileDescriptorsTest {

  private static final String YAML =
      """
      domain: edge
      descriptors:
        - key: path
          rate_limit: {unit: minute, requests_per_unit: 2}
        - key: remote_address
          rate_limit: {unit: minute, requests_per_unit: 3}
        - key: account
          rate_limits:
            - {unit: second, requests_per_unit: 5}
            - {unit: minute, requests_per_unit: 50}
        - key: tenant
          descriptors:
            - key: user
              descriptors:
                - key: route
                  descriptors:
                    - key: client
                      rate_limit: {unit: minute, requests_per_unit: 2}
      """;

  private final FakeClock clock = new FakeClock();
  private final InMemoryBucketStore store = new InMemoryBucketStore(clock);
  private final RecordingMetrics metrics = new RecordingMetrics();
  private final ConfigHolder config = new ConfigHolder();
  private ShouldRateLimitHandler handler;

  @BeforeEach
  void start() throws Exception {
    config.set(
        new ConfigLoader(EnvoySettings.fromEnvironment(Map.of()).loadOptions())
            .compile(List.of(new ConfigFile("edge.yaml", YAML))));
    handler = handlerOver(core());
  }

  /** Returns the handler of this test's config and limits over {@code service}. */
  private ShouldRateLimitHandler handlerOver(dev.weir.core.limiter.RateLimitService service) {
    return new ShouldRateLimitHandler(
        config,
        service,
        clock,
        EnvoySettings.fromEnvironment(Map.of()),
        new EnvoyMetrics(new SimpleMeterRegistry()),
        new InputLimits(65_536, 65_536, 1024, 1024, 4, 256),
        new CheckMeter(metrics));
  }

  private LocalRateLimitService core() {
    return new LocalRateLimitService(
        new LocalLimiter(new RateLimitEngine(ZoneOffset.UTC), store, clock), "a:1");
  }

  private static RateLimitDescriptor descriptor(String... keyValues) {
    RateLimitDescriptor.Builder b = RateLimitDescriptor.newBuilder();
    for (int i = 0; i < keyValues.length; i += 2) {
      b.addEntries(
          RateLimitDescriptor.Entry.newBuilder().setKey(keyValues[i]).setValue(keyValues[i + 1]));
    }
    return b.build();
  }

  private RateLimitResponse call(RateLimitDescriptor... descriptors) {
    return handler
        .decide(
            RateLimitRequest.newBuilder()
                .setDomain("edge")
                .addAllDescriptors(List.of(descriptors))
                .build())
        .join();
  }

  @Test
  void longPathValue_countedOnItsOwnCounterWithTheOtherDescriptor() {
    String longPath = "/productpage?" + "x".repeat(60_000);
    RateLimitDescriptor path = descriptor("path", longPath);
    RateLimitDescriptor ip = descriptor("remote_address", "10.0.0.1");

    List<Code> overall =
        List.of(
            call(path, ip).getOverallCode(),
            call(path, ip).getOverallCode(),
            call(path, ip).getOverallCode());

    assertThat(overall).containsExactly(Code.OK, Code.OK, Code.OVER_LIMIT);
    RateLimitResponse fourth = call(ip);
    assertThat(fourth.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(store.size()).isEqualTo(2);
  }

  @Test
  void differentLongValues_neverShareACounter() {
    String prefix = "/p?" + "y".repeat(10_000);

    assertThat(call(descriptor("path", prefix + "a")).getOverallCode()).isEqualTo(Code.OK);
    assertThat(call(descriptor("path", prefix + "a")).getOverallCode()).isEqualTo(Code.OK);
    assertThat(call(descriptor("path", prefix + "b")).getOverallCode()).isEqualTo(Code.OK);
    assertThat(call(descriptor("path", prefix + "a")).getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(store.size()).isEqualTo(2);
  }

  @Test
  void tooManyEntries_thatDescriptorOverLimitAndCountedAsRefused_othersCounted() {
    RateLimitDescriptor five = descriptor("a", "1", "b", "2", "c", "3", "d", "4", "e", "5");

    RateLimitResponse response = call(five, descriptor("remote_address", "10.0.0.1"));

    assertThat(response.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(response.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(response.getStatuses(1).getCode()).isEqualTo(Code.OK);
    assertThat(response.getStatuses(1).getLimitRemaining()).isEqualTo(2);
    assertThat(metrics.events()).contains("refused too_many_entries");
  }

  @Test
  void moreDescriptorsThanOneCallCarries_allOverLimitNothingCounted() {
    RateLimitDescriptor[] many = new RateLimitDescriptor[1001];
    for (int i = 0; i < many.length; i++) {
      many[i] = descriptor("remote_address", "10.0.0." + i);
    }

    RateLimitResponse response = call(many);

    assertEveryDescriptorRefusedAsTooManyItems(response);
  }

  @Test
  void fewerDescriptorsThanTheCapButMoreCountersThanOneCallChecks_allOverLimitNotAnError() {
    RateLimitDescriptor[] many = new RateLimitDescriptor[501];
    for (int i = 0; i < many.length; i++) {
      many[i] = descriptor("account", "a" + i);
    }

    RateLimitResponse response = call(many);

    assertEveryDescriptorRefusedAsTooManyItems(response);
  }

  @Test
  void fourValuesJustBelowTheDigestLength_keyFitsWhatTheCountersOwnerAccepts() {
    String v = "v".repeat(255);
    RateLimitDescriptor deep =
        descriptor("tenant", v + "t", "user", v + "u", "route", v + "r", "client", v + "c");
    List<dev.weir.core.model.RateLimitRequest> checked = new java.util.ArrayList<>();
    handler =
        handlerOver(
            requests -> {
              checked.addAll(requests);
              return core().decide(requests);
            });

    List<Code> overall =
        List.of(call(deep).getOverallCode(), call(deep).getOverallCode(), call(deep).getOverallCode());

    assertThat(overall).containsExactly(Code.OK, Code.OK, Code.OVER_LIMIT);
    // What an owner on another node checks first (PeerInputValidator): nothing to refuse.
    InputLimits limits = new InputLimits(65_536, 65_536, 1024, 1024, 4, 256);
    assertThat(checked).hasSize(3).allSatisfy(r -> assertThat(limits.checkItem(r)).isEmpty());
    assertThat(checked.get(0).uniqueKey()).startsWith("#").doesNotContain("=");
  }

  @Test
  void counterOfOneDescriptorUnreachable_anotherOverTheLimit_overLimitNotAnError() {
    LocalRateLimitService core = core();
    handler =
        handlerOver(
            requests -> {
              List<dev.weir.core.model.RateLimitResponse> out = new java.util.ArrayList<>();
              for (dev.weir.core.model.RateLimitRequest r : requests) {
                out.add(
                    r.uniqueKey().contains("path")
                        ? dev.weir.core.model.RateLimitResponse.error(
                            "cannot reach the owner of this key")
                        : core.decide(List.of(r)).join().get(0));
              }
              return java.util.concurrent.CompletableFuture.completedFuture(out);
            });
    RateLimitDescriptor ip = descriptor("remote_address", "10.0.0.1");
    RateLimitDescriptor path = descriptor("path", "/checkout");
    for (int i = 0; i < 3; i++) {
      assertThat(call(ip).getOverallCode()).isEqualTo(Code.OK);
    }

    RateLimitResponse both = call(ip, path);

    assertThat(both.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(both.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(both.getStatuses(1).getCode()).as("not checked").isEqualTo(Code.UNKNOWN);
    assertThatThrownBy(() -> call(path))
        .as("an answer that could be OK still fails, so failure_mode_deny applies")
        .hasRootCauseInstanceOf(io.grpc.StatusRuntimeException.class)
        .hasMessageContaining("UNAVAILABLE: cannot reach the owner of this key");
  }

  /** Asserts that every descriptor of {@code response} was refused for too many items. */
  private void assertEveryDescriptorRefusedAsTooManyItems(RateLimitResponse response) {
    assertThat(response.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(response.getStatusesList()).allMatch(s -> s.getCode() == Code.OVER_LIMIT);
    assertThat(store.size()).isZero();
    assertThat(metrics.events()).containsExactly("refused too_many_items");
  }

  /** Found by {@code EnvoyFrontDoorFuzzTest#shouldRateLimit}: the call was answered UNAVAILABLE. */
  @Test
  void limitOverrideOnADescriptorWithoutEntries_thatDescriptorOverLimitAndCountedAsRefused() {
    RateLimitDescriptor noEntries =
        RateLimitDescriptor.newBuilder()
            .setLimit(
                RateLimitDescriptor.RateLimitOverride.newBuilder()
                    .setRequestsPerUnit(7)
                    .setUnit(io.envoyproxy.envoy.type.v3.RateLimitUnit.MINUTE))
            .build();

    RateLimitResponse response = call(noEntries, descriptor("remote_address", "10.0.0.1"));

    assertThat(response.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(response.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(response.getStatuses(1).getCode()).isEqualTo(Code.OK);
    assertThat(metrics.events()).contains("refused invalid_override");
  }
}
