package dev.weir.envoy.service;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.DictionaryEntries;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.store.ClockBucketStore;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.LocalRateLimitService;
import dev.weir.core.testkit.RecordingMetrics;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.DescriptorConfigException;
import dev.weir.envoy.http.JsonHandler;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.http.HttpAnswer;
import dev.weir.http.HttpCall;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

/**
 * Coverage-guided fuzzing of Envoy's front doors over the real local engine and a descriptor config
 * with every kind of rule: any bytes parsed as a {@code RateLimitRequest} (what the gRPC service
 * receives) and any {@code POST /json} body through {@link JsonHandler}. Nothing a client sends is
 * answered with an error Envoy would fail open on: the answer is OK or OVER_LIMIT with one status
 * per descriptor, except {@code INVALID_ARGUMENT} for an empty domain or descriptor list (which
 * Envoy never sends), and a body that is not a request is a 400 with a message. Seeds: {@code
 * EnvoyFrontDoorFuzzTestInputs/<method>} in the test resources.
 */
class EnvoyFrontDoorFuzzTest {

  private static final String YAML =
      """
      domain: shop
      descriptors:
        - key: remote_address
          rate_limit: {unit: minute, requests_per_unit: 2, name: per-ip}
        - key: path
          value: /api
          detailed_metric: true
          descriptors:
            - key: user
              rate_limit: {unit: hour, requests_per_unit: 4294967295}
        - key: files
          value: "report*"
          share_threshold: true
          shadow_mode: true
          rate_limit:
            unit: hour
            requests_per_unit: 10
            algorithm: leaky_bucket
            burst: 20
        - key: account
          rate_limits:
            - {unit: second, requests_per_unit: 3, name: burst}
            - {unit: minute, unit_multiplier: 5, requests_per_unit: 5, name: sustained,
               algorithm: sliding_window}
        - key: internal
          rate_limit:
            unlimited: true
            replaces: [{name: per-ip}]
        - key: fixed
          rate_limit: {unit: day, requests_per_unit: 1, algorithm: fixed_window}
        - key: whitelisted
      """;

  private static final FakeClock CLOCK = new FakeClock(1_767_225_600_000L);
  private static final LocalRateLimitService CORE =
      new LocalRateLimitService(
          new LocalLimiter(
              new RateLimitEngine(ZoneOffset.UTC), new ClockBucketStore(CLOCK, 10_000), CLOCK),
          "127.0.0.1:1051");
  private static final ShouldRateLimitHandler HANDLER = handler();
  private static final JsonHandler JSON = new JsonHandler(HANDLER);

  private static ShouldRateLimitHandler handler() {
    EnvoySettings settings = EnvoySettings.fromEnvironment(Map.of());
    ConfigHolder config = new ConfigHolder();
    try {
      config.set(
          new ConfigLoader(settings.loadOptions())
              .compile(List.of(new ConfigFile("shop.yaml", YAML))));
    } catch (DescriptorConfigException e) {
      throw new IllegalStateException(e);
    }
    return new ShouldRateLimitHandler(
        config,
        CORE,
        CLOCK,
        settings,
        new EnvoyMetrics(new SimpleMeterRegistry()),
        InputLimits.DEFAULTS,
        new CheckMeter(new RecordingMetrics()));
  }

  @FuzzTest(maxDuration = "10s")
  void shouldRateLimit(byte[] bytes) {
    RateLimitRequest request;
    try {
      request = RateLimitRequest.parseFrom(bytes);
    } catch (InvalidProtocolBufferException notAMessage) {
      return;
    }
    CompletableFuture<RateLimitResponse> answer = HANDLER.decide(request);

    assertThat(answer).isDone();
    try {
      RateLimitResponse response = answer.join();
      assertThat(response.getOverallCode())
          .isIn(RateLimitResponse.Code.OK, RateLimitResponse.Code.OVER_LIMIT);
      assertThat(response.getStatusesCount()).isEqualTo(request.getDescriptorsCount());
    } catch (CompletionException e) {
      assertThat(e.getCause()).isInstanceOf(StatusRuntimeException.class);
      Status status = Status.fromThrowable(e);
      assertThat(status.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
      assertThat(request.getDomain().isEmpty() || request.getDescriptorsCount() == 0).isTrue();
    }
    assertThat(CORE.health().healthy()).isTrue();
  }

  @FuzzTest(maxDuration = "10s")
  @DictionaryEntries({
    "\"domain\":",
    "\"shop\"",
    "\"descriptors\":",
    "\"entries\":",
    "\"key\":",
    "\"value\":",
    "\"hitsAddend\":",
    "\"hits_addend\":",
    "\"limit\":",
    "\"requestsPerUnit\":",
    "\"unit\":",
    "\"MINUTE\"",
    "\"remote_address\"",
    "\"account\"",
    "\"path\"",
    "\"/api\"",
    "\"user\"",
    "\"files\"",
    "\"internal\""
  })
  void json(byte[] body) throws Exception {
    CompletionStage<HttpAnswer> answer = JSON.handle(new HttpCall("POST", "/json", body));

    assertThat(answer).isDone();
    HttpAnswer reply = answer.toCompletableFuture().join();
    assertThat(reply.status()).isIn(200, 429, 400);
    if (reply.status() == 400) {
      assertThat(reply.text()).matches("(?s)\\{\"code\":(3|11),\"message\":\"[^\"].*\"}");
    } else {
      RateLimitResponse.Builder response = RateLimitResponse.newBuilder();
      JsonFormat.parser().merge(reply.text(), response);
      assertThat(response.getOverallCode())
          .isEqualTo(
              reply.status() == 429
                  ? RateLimitResponse.Code.OVER_LIMIT
                  : RateLimitResponse.Code.OK);
    }
    assertThat(CORE.health().healthy()).isTrue();
  }
}
