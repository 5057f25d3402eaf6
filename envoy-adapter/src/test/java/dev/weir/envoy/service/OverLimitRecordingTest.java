package dev.weir.envoy.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.limiter.InputLimits;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.toplimited.LimitedKey;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.metrics.EnvoyMetrics;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What {@code ShouldRateLimit} reports to its over-limit recorder: every descriptor over its limit
 * (shadow-mode ones too, and ones checked with {@code hits_addend} 0, whose request Envoy refuses)
 * with its domain, rule and entries, and nothing for answers under the limit.
 */
class OverLimitRecordingTest {

  private static final String YAML =
      """
      domain: shop
      descriptors:
        - key: remote_address
          rate_limit: {unit: minute, requests_per_unit: 1, name: per-ip}
        - key: path
          descriptors:
            - key: user
              rate_limit: {unit: hour, requests_per_unit: 1}
        - key: trial
          shadow_mode: true
          rate_limit: {unit: minute, requests_per_unit: 1}
      """;

  private record Recorded(LimitedKey key, long hits) {}

  private final FakeClock clock = new FakeClock();
  private final List<Recorded> recorded = new ArrayList<>();
  private InProcessFrontDoor frontDoor;
  private RateLimitServiceGrpc.RateLimitServiceBlockingStub stub;

  @BeforeEach
  void start() throws Exception {
    EnvoySettings settings = EnvoySettings.fromEnvironment(Map.of());
    ConfigHolder holder =
        new ConfigHolder(
            new ConfigLoader(settings.loadOptions())
                .compile(List.of(new ConfigFile("shop.yaml", YAML))));
    ShouldRateLimitHandler handler =
        new ShouldRateLimitHandler(
            holder,
            new RecordingRateLimitService(clock),
            clock,
            settings,
            new EnvoyMetrics(new SimpleMeterRegistry()),
            InputLimits.DEFAULTS,
            CheckMeter.NOOP,
            (key, hits) -> recorded.add(new Recorded(key, hits)),
            MatchTracing.NONE);
    frontDoor = new InProcessFrontDoor(handler);
    stub = frontDoor.stub();
  }

  @AfterEach
  void stop() {
    frontDoor.close();
  }

  private void call(int hits, String... keyValues) {
    RateLimitDescriptor.Builder d = RateLimitDescriptor.newBuilder();
    for (int i = 0; i < keyValues.length; i += 2) {
      d.addEntries(
          RateLimitDescriptor.Entry.newBuilder().setKey(keyValues[i]).setValue(keyValues[i + 1]));
    }
    stub.shouldRateLimit(
        RateLimitRequest.newBuilder()
            .setDomain("shop")
            .setHitsAddend(hits)
            .addDescriptors(d)
            .build());
  }

  @Test
  void underTheLimit_recordsNothing() {
    call(1, "remote_address", "10.0.0.1");
    call(1, "path", "/a", "user", "u1");
    call(1, "trial", "t");

    assertThat(recorded).isEmpty();
  }

  @Test
  void overTheLimit_recordsTheDomainRuleAndEntries() {
    call(1, "remote_address", "10.0.0.1");
    call(3, "remote_address", "10.0.0.1");
    call(1, "path", "/a", "user", "u1");
    call(1, "path", "/a", "user", "u1");

    assertThat(recorded)
        .containsExactly(
            new Recorded(
                new LimitedKey("envoy", "shop", "per-ip", List.of("remote_address", "10.0.0.1")),
                3),
            new Recorded(
                new LimitedKey("envoy", "shop", "path.user", List.of("path", "/a", "user", "u1")),
                1));
  }

  @Test
  void descriptorHitsAddendZero_overTheLimit_recordedAsEnvoyRefusesTheRequest() {
    call(1, "remote_address", "10.0.0.1");
    call(1, "remote_address", "10.0.0.1");
    recorded.clear();
    RateLimitDescriptor check =
        RateLimitDescriptor.newBuilder()
            .addEntries(
                RateLimitDescriptor.Entry.newBuilder()
                    .setKey("remote_address")
                    .setValue("10.0.0.1"))
            .setHitsAddend(com.google.protobuf.UInt64Value.of(0))
            .build();

    RateLimitResponse response =
        stub.shouldRateLimit(
            RateLimitRequest.newBuilder().setDomain("shop").addDescriptors(check).build());

    assertThat(response.getOverallCode()).isEqualTo(RateLimitResponse.Code.OVER_LIMIT);
    assertThat(recorded)
        .containsExactly(
            new Recorded(
                new LimitedKey("envoy", "shop", "per-ip", List.of("remote_address", "10.0.0.1")),
                0));
  }

  @Test
  void shadowModeRule_overTheLimit_recordedThoughAnsweredOk() {
    call(1, "trial", "t");
    call(1, "trial", "t");

    assertThat(recorded)
        .containsExactly(
            new Recorded(new LimitedKey("envoy", "shop", "trial", List.of("trial", "t")), 1));
  }

  @Test
  void longValue_recordedAsItsDigest() {
    String longValue = "v".repeat(300);
    call(1, "remote_address", longValue);
    call(1, "remote_address", longValue);

    assertThat(recorded).hasSize(1);
    assertThat(recorded.get(0).key().entries().get(1)).startsWith("#").hasSizeLessThan(100);
  }

  @Test
  void limitOverrideWithManyLongEntries_recordKeepsTheFirstAndADigestOfTheRest() {
    RateLimitDescriptor.Builder d =
        RateLimitDescriptor.newBuilder()
            .setLimit(
                RateLimitDescriptor.RateLimitOverride.newBuilder()
                    .setRequestsPerUnit(1)
                    .setUnit(io.envoyproxy.envoy.type.v3.RateLimitUnit.MINUTE));
    for (int i = 0; i < 20; i++) {
      d.addEntries(
          RateLimitDescriptor.Entry.newBuilder()
              .setKey("k" + i + "k".repeat(150))
              .setValue("v".repeat(150)));
    }
    RateLimitRequest request =
        RateLimitRequest.newBuilder().setDomain("shop").addDescriptors(d).build();
    stub.shouldRateLimit(request);
    stub.shouldRateLimit(request);

    assertThat(recorded).hasSize(1);
    List<String> entries = recorded.get(0).key().entries();
    assertThat(String.join("", entries)).hasSizeLessThan(ResponseBuilder.MAX_RECORDED_CHARS + 100);
    assertThat(entries.get(0)).startsWith("k0");
    assertThat(entries.get(entries.size() - 2)).isEqualTo(ResponseBuilder.MORE_ENTRIES);
    assertThat(entries.get(entries.size() - 1)).startsWith("#");
  }
}
