package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.LocalRateLimitService;
import dev.weir.core.toplimited.OverLimitRecorder;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.service.ShouldRateLimitHandler;
import dev.weir.gubernator.NativeCheck;
import dev.weir.gubernator.NativeTracing;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Which limits fired, as the front-door span tells it: the SDK with an in-memory exporter, a
 * front-door span current while a {@code ShouldRateLimit} call ({@link OtelMatchTracing}) or a
 * native call ({@link OtelNativeTracing}) is answered by a real single-node service, and the
 * attributes the span ends with.
 */
class OverLimitTracingTest {

  private static final AttributeKey<List<String>> OVER_LIMIT_RULES =
      AttributeKey.stringArrayKey("weir.over_limit_rules");
  private static final AttributeKey<List<String>> SHADOW_OVER_LIMIT_RULES =
      AttributeKey.stringArrayKey("weir.shadow_over_limit_rules");
  private static final AttributeKey<List<String>> OVER_LIMIT_NAMES =
      AttributeKey.stringArrayKey("weir.over_limit_names");

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
          rate_limit: {unit: minute, requests_per_unit: 1, name: trial-rule}
      """;

  /** Ends spans into a list, as the SDK's in-memory exporter does. */
  private static final class ListExporter implements SpanExporter {
    final List<SpanData> spans = new ArrayList<>();

    @Override
    public synchronized CompletableResultCode export(Collection<SpanData> ended) {
      spans.addAll(ended);
      return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode flush() {
      return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode shutdown() {
      return CompletableResultCode.ofSuccess();
    }
  }

  private final ListExporter exporter = new ListExporter();
  private final SdkTracerProvider provider =
      SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(exporter)).build();
  private final Tracer tracer = provider.get("test");
  private final FakeClock clock = new FakeClock();
  private final LocalRateLimitService service =
      new LocalRateLimitService(
          new LocalLimiter(
              new RateLimitEngine(ZoneOffset.UTC), new InMemoryBucketStore(clock), clock),
          "127.0.0.1:1051");

  @AfterEach
  void stop() {
    provider.close();
  }

  @Test
  void shouldRateLimit_underTheLimit_neitherAttribute() throws Exception {
    ShouldRateLimitHandler handler = envoy(Map.of(), YAML);

    SpanData front = shouldRateLimit(handler, "remote_address", "trial", "path");

    assertThat(front.getAttributes().get(OVER_LIMIT_RULES)).isNull();
    assertThat(front.getAttributes().get(SHADOW_OVER_LIMIT_RULES)).isNull();
  }

  @Test
  void shouldRateLimit_overTheLimit_namesEachFiredRuleOnceByNameElsePath() throws Exception {
    ShouldRateLimitHandler handler = envoy(Map.of(), YAML);
    shouldRateLimit(handler, "remote_address", "path");

    SpanData front = shouldRateLimit(handler, "remote_address", "remote_address", "path");

    assertThat(front.getAttributes().get(OVER_LIMIT_RULES))
        .containsExactly("per-ip", "path.user");
    assertThat(front.getAttributes().get(SHADOW_OVER_LIMIT_RULES)).isNull();
  }

  @Test
  void shouldRateLimit_shadowRuleOverTheLimit_namedApartFromEnforcedOnes() throws Exception {
    ShouldRateLimitHandler handler = envoy(Map.of(), YAML);
    shouldRateLimit(handler, "trial", "remote_address");

    SpanData front = shouldRateLimit(handler, "trial", "remote_address");

    assertThat(front.getAttributes().get(SHADOW_OVER_LIMIT_RULES)).containsExactly("trial-rule");
    assertThat(front.getAttributes().get(OVER_LIMIT_RULES)).containsExactly("per-ip");
  }

  @Test
  void shouldRateLimit_globalShadowMode_everyFiredRuleNamedAsShadow() throws Exception {
    ShouldRateLimitHandler handler = envoy(Map.of("WEIR_ENVOY_SHADOW_MODE", "true"), YAML);
    shouldRateLimit(handler, "remote_address", "trial");

    SpanData front = shouldRateLimit(handler, "remote_address", "trial");

    assertThat(front.getAttributes().get(SHADOW_OVER_LIMIT_RULES))
        .containsExactlyInAnyOrder("per-ip", "trial-rule");
    assertThat(front.getAttributes().get(OVER_LIMIT_RULES)).isNull();
  }

  @Test
  void shouldRateLimit_moreFiredRulesThanTheCap_namesTheFirstOnes() throws Exception {
    StringBuilder yaml = new StringBuilder("domain: shop\ndescriptors:\n");
    String[] keys = new String[OtelClusterTracing.MAX_NAMES + 2];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = "rule" + i;
      yaml.append("  - key: ")
          .append(keys[i])
          .append("\n    rate_limit: {unit: minute, requests_per_unit: 1}\n");
    }
    ShouldRateLimitHandler handler = envoy(Map.of(), yaml.toString());
    shouldRateLimit(handler, keys);

    SpanData front = shouldRateLimit(handler, keys);

    assertThat(front.getAttributes().get(OVER_LIMIT_RULES))
        .isEqualTo(List.of(keys).subList(0, OtelClusterTracing.MAX_NAMES));
  }

  @Test
  void getRateLimits_namesTheItemsOverTheirLimitOnceAndAtMostTheCap() {
    NativeCheck check =
        new NativeCheck(
            service,
            InputLimits.DEFAULTS,
            CheckMeter.NOOP,
            OverLimitRecorder.NOOP,
            new OtelNativeTracing());
    List<RateLimitRequest> first = new ArrayList<>();
    List<String> firstNames = new ArrayList<>();
    for (int i = 0; i < OtelClusterTracing.MAX_NAMES + 2; i++) {
      first.add(item("name" + i, "k", 1));
      firstNames.add("name" + i);
    }
    first.add(1, item("roomy", "k", 10));
    first.add(2, item("name0", "other-key", 1));
    first.add(0, item("erroneous", "", 1));

    SpanData under = traced(() -> check.decide(first).join());
    SpanData over = traced(() -> check.decide(first).join());
    SpanData mixed =
        traced(() -> check.decide(List.of(item("roomy", "k", 10), item("name3", "k", 1))).join());

    assertThat(check.decide(first.subList(0, 1)).join().get(0).isError()).isTrue();
    assertThat(under.getAttributes().get(OVER_LIMIT_NAMES)).isNull();
    assertThat(over.getAttributes().get(OVER_LIMIT_NAMES))
        .isEqualTo(firstNames.subList(0, OtelClusterTracing.MAX_NAMES));
    assertThat(mixed.getAttributes().get(OVER_LIMIT_NAMES)).containsExactly("name3");
  }

  @Test
  void getRateLimits_noCurrentSpan_tracesNothing() {
    assertThat(new OtelNativeTracing().start()).isSameAs(NativeTracing.Call.NONE);
  }

  @Test
  void getRateLimits_currentSpanNotSampled_tracesNothing() {
    Span unsampled =
        Span.wrap(
            SpanContext.create(
                "0af7651916cd43dd8448eb211c80319c",
                "b7ad6b7169203331",
                TraceFlags.getDefault(),
                TraceState.getDefault()));

    try (Scope ignored = unsampled.makeCurrent()) {
      assertThat(new OtelNativeTracing().start()).isSameAs(NativeTracing.Call.NONE);
    }
    assertThat(exporter.spans).isEmpty();
  }

  private ShouldRateLimitHandler envoy(Map<String, String> environment, String yaml)
      throws Exception {
    EnvoySettings settings = EnvoySettings.fromEnvironment(environment);
    ConfigHolder config =
        new ConfigHolder(
            new ConfigLoader(settings.loadOptions())
                .compile(List.of(new ConfigFile("shop.yaml", yaml))));
    return new ShouldRateLimitHandler(
        config,
        service,
        clock,
        settings,
        new EnvoyMetrics(new SimpleMeterRegistry()),
        InputLimits.DEFAULTS,
        CheckMeter.NOOP,
        OverLimitRecorder.NOOP,
        new OtelMatchTracing(tracer));
  }

  /**
   * Asks {@code handler} for one descriptor per key of {@code keys} ({@code path} with a {@code
   * user} entry), each with the value "v", and returns the call's front-door span.
   */
  private SpanData shouldRateLimit(ShouldRateLimitHandler handler, String... keys) {
    var request =
        io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest.newBuilder().setDomain("shop");
    for (String key : keys) {
      RateLimitDescriptor.Builder descriptor = RateLimitDescriptor.newBuilder();
      descriptor.addEntries(RateLimitDescriptor.Entry.newBuilder().setKey(key).setValue("v"));
      if (key.equals("path")) {
        descriptor.addEntries(RateLimitDescriptor.Entry.newBuilder().setKey("user").setValue("v"));
      }
      request.addDescriptors(descriptor);
    }
    return traced(() -> handler.decide(request.build()).join());
  }

  private static RateLimitRequest item(String name, String key, long limit) {
    return RateLimitRequest.builder(name, key).hits(1).limit(limit).duration(60_000).build();
  }

  /** Runs {@code call} with a front-door span current, and returns that span once ended. */
  private SpanData traced(Supplier<?> call) {
    Span front = tracer.spanBuilder("front").startSpan();
    try (Scope ignored = front.makeCurrent()) {
      call.get();
    } finally {
      front.end();
    }
    return exporter.spans.stream()
        .filter(s -> s.getSpanId().equals(front.getSpanContext().getSpanId()))
        .findFirst()
        .orElseThrow();
  }
}
