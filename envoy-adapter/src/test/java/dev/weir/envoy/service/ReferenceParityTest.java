package dev.weir.envoy.service;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ListValue;
import com.google.protobuf.Struct;
import com.google.protobuf.UInt64Value;
import com.google.protobuf.Value;
import dev.weir.core.testkit.FakeClock;
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
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Answers that envoyproxy/ratelimit gives differently from what Weir gave before: which status the
 * RateLimit-* headers follow, a replaced unlimited rule, dynamic metadata, near-limit counting of
 * refused hits and the global quota mode.
 */
class ReferenceParityTest {

  private static final String YAML =
      """
      domain: shop
      descriptors:
        - key: images
          rate_limit: {unit: hour, requests_per_unit: 1}
        - key: blocked
          rate_limit: {unit: second, requests_per_unit: 0}
        - key: user
          rate_limit: {unit: minute, requests_per_unit: 10}
        - key: free
          rate_limit: {unlimited: true, name: free}
        - key: paid
          rate_limit:
            unit: minute
            requests_per_unit: 3
            replaces: [{name: free}]
        - key: tenant
          metadata: {team: payments, labels: {tier: gold}}
          rate_limit: {unit: minute, requests_per_unit: 1}
        - key: region
          metadata: {team: other, labels: {zone: a}, weight: 2}
          rate_limit: {unit: minute, requests_per_unit: 5}
        - key: tokens
          rate_limit: {unit: minute, requests_per_unit: 20, algorithm: token_bucket}
        - key: status
          metadata: {404: a, nested: {true: b}}
          rate_limit: {unit: minute, requests_per_unit: 5}
        - key: trial
          shadow_mode: true
          rate_limit: {unit: minute, requests_per_unit: 5, algorithm: token_bucket}
        - key: soft
          quota_mode: true
          rate_limit: {unit: second, requests_per_unit: 0}
      """;

  private final FakeClock clock = new FakeClock();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private ShouldRateLimitHandler handler;

  private void start(Map<String, String> env) throws Exception {
    EnvoySettings settings = EnvoySettings.fromEnvironment(env);
    ConfigHolder holder =
        new ConfigHolder(
            new ConfigLoader(settings.loadOptions())
                .compile(List.of(new ConfigFile("shop.yaml", YAML))));
    handler =
        new ShouldRateLimitHandler(
            holder,
            new RecordingRateLimitService(clock),
            clock,
            settings,
            new EnvoyMetrics(registry));
  }

  private static RateLimitDescriptor descriptor(String key, String value) {
    return RateLimitDescriptor.newBuilder()
        .addEntries(RateLimitDescriptor.Entry.newBuilder().setKey(key).setValue(value))
        .build();
  }

  private RateLimitResponse call(RateLimitDescriptor... descriptors) {
    return call(0, descriptors);
  }

  private RateLimitResponse call(int hits, RateLimitDescriptor... descriptors) {
    return handler
        .decide(
            RateLimitRequest.newBuilder()
                .setDomain("shop")
                .setHitsAddend(hits)
                .addAllDescriptors(List.of(descriptors))
                .build())
        .join();
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

  private static List<String> headers(RateLimitResponse response) {
    return response.getResponseHeadersToAddList().stream()
        .map(h -> h.getKey() + "=" + h.getValue())
        .toList();
  }

  @Test
  void headers_severalDescriptorsOverLimit_followTheLastOne() throws Exception {
    start(Map.of("WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_ENABLED", "true"));
    clock.advance(Duration.ofSeconds(100));
    call(descriptor("images", "a.png"));

    RateLimitResponse response = call(descriptor("blocked", "x"), descriptor("images", "a.png"));

    assertThat(response.getStatusesList()).allMatch(s -> s.getCode() == Code.OVER_LIMIT);
    assertThat(headers(response))
        .containsExactly("RateLimit-Limit=1", "RateLimit-Remaining=0", "RateLimit-Reset=3500");
  }

  @Test
  void headers_noneOverLimit_followTheFirstWithTheLeastRemaining() throws Exception {
    start(Map.of("WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_ENABLED", "true"));
    call(5, descriptor("user", "x"));

    RateLimitResponse response =
        call(descriptor("user", "fresh"), descriptor("user", "x"), descriptor("region", "r"));

    assertThat(response.getStatusesList())
        .extracting(s -> s.getLimitRemaining())
        .containsExactly(9, 4, 4);
    assertThat(headers(response))
        .containsExactly("RateLimit-Limit=10", "RateLimit-Remaining=4", "RateLimit-Reset=60");
  }

  @Test
  void replacedUnlimitedRule_stillReportsUnlimitedRemaining() throws Exception {
    start(Map.of());

    RateLimitResponse response = call(descriptor("free", "x"), descriptor("paid", "y"));

    assertThat(Integer.toUnsignedLong(response.getStatuses(0).getLimitRemaining()))
        .isEqualTo(4_294_967_295L);
    assertThat(response.getStatuses(0).hasCurrentLimit()).isFalse();
    assertThat(response.getStatuses(1).getLimitRemaining()).isEqualTo(2);
  }

  @Test
  void dynamicMetadata_off_isNotSent() throws Exception {
    start(Map.of());

    assertThat(call(descriptor("tenant", "t1")).hasDynamicMetadata()).isFalse();
  }

  @Test
  void dynamicMetadata_descriptorHitsAddendFrom2To63Up_writtenAsTheUnsignedNumber()
      throws Exception {
    start(Map.of("WEIR_ENVOY_RESPONSE_DYNAMIC_METADATA", "true"));
    RateLimitDescriptor huge =
        descriptor("region", "r1").toBuilder()
            .setHitsAddend(UInt64Value.newBuilder().setValue(-1L))
            .build();

    RateLimitDescriptor halfway =
        descriptor("region", "r1").toBuilder()
            .setHitsAddend(UInt64Value.newBuilder().setValue(Long.MIN_VALUE + 1025))
            .build();

    RateLimitResponse response = call(huge, halfway);

    assertThat(
            response.getDynamicMetadata().getFieldsOrThrow("descriptors").getListValue()
                .getValuesList().stream()
                .map(v -> v.getStructValue().getFieldsOrThrow("hitsAddend").getNumberValue())
                .toList())
        .as("2^64 - 1 and 2^63 + 1025, rounded once, as Go's float64(uint64) writes them")
        .containsExactly(1.8446744073709552e19, 9.223372036854777856e18);
  }

  @Test
  void dynamicMetadata_on_carriesTheRequestAndTheMergedMetadataOfPassingRules() throws Exception {
    start(Map.of("WEIR_ENVOY_RESPONSE_DYNAMIC_METADATA", "true"));
    RateLimitDescriptor region =
        descriptor("region", "r1").toBuilder()
            .setHitsAddend(UInt64Value.newBuilder().setValue(1))
            .build();

    RateLimitResponse first = call(3, descriptor("tenant", "t1"), region);
    RateLimitResponse second = call(descriptor("tenant", "t1"), region);

    assertThat(first.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    Struct expectedDescriptors =
        Struct.newBuilder()
            .putFields("domain", text("shop"))
            .putFields(
                "descriptors",
                list(
                    struct(Map.of("entries", list(text("tenant=t1")))),
                    struct(Map.of("entries", list(text("region=r1")), "hitsAddend", number(1)))))
            .build();
    assertThat(first.getDynamicMetadata())
        .isEqualTo(
            expectedDescriptors.toBuilder()
                .putFields("hitsAddend", number(3))
                .putFields("overLimitRule", text("tenant"))
                .putFields("overLimitRequestsPerUnit", number(1))
                .putFields("overLimitUnit", text("MINUTE"))
                .putFields("overLimitShadowMode", Value.newBuilder().setBoolValue(false).build())
                .putFields(
                    "metadata",
                    struct(
                        Map.of(
                            "team", text("other"),
                            "labels", struct(Map.of("zone", text("a"))),
                            "weight", number(2))))
                .build());
    assertThat(second.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
    RateLimitResponse third = call(descriptor("tenant", "t2"), region);
    assertThat(third.getDynamicMetadata().getFieldsOrThrow("metadata"))
        .isEqualTo(
            struct(
                Map.of(
                    "team", text("payments"),
                    "labels", struct(Map.of("tier", text("gold"), "zone", text("a"))),
                    "weight", number(2))));
  }

  @Test
  void dynamicMetadata_numberAndBooleanKeys_carriedAsTheirText() throws Exception {
    start(Map.of("WEIR_ENVOY_RESPONSE_DYNAMIC_METADATA", "true"));

    RateLimitResponse response = call(descriptor("status", "s"));

    assertThat(response.getDynamicMetadata().getFieldsOrThrow("metadata"))
        .isEqualTo(
            struct(Map.of("404", text("a"), "nested", struct(Map.of("true", text("b"))))));
  }

  @Test
  void nearLimit_refusedHitsWithinWhatRemained_countAsNearTheRestAsOver() throws Exception {
    start(Map.of());

    call(15, descriptor("tokens", "t"));
    RateLimitResponse refused = call(7, descriptor("tokens", "t"));

    assertThat(refused.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(counter("total_hits", "tokens")).isEqualTo(22);
    assertThat(counter("within_limit", "tokens")).isEqualTo(15);
    assertThat(counter("over_limit", "tokens")).isEqualTo(2);
    assertThat(counter("near_limit", "tokens")).isEqualTo(4);
  }

  @Test
  void shadowMode_refusedHitsOfAShadowRule_countOnlyThoseBeyondWhatRemainedAsOverLimit()
      throws Exception {
    start(Map.of());

    call(3, descriptor("trial", "t"));
    RateLimitResponse refused = call(4, descriptor("trial", "t"));

    assertThat(refused.getOverallCode()).isEqualTo(Code.OK);
    assertThat(counter("over_limit", "trial")).isEqualTo(2);
    assertThat(counter("shadow_mode", "trial")).isEqualTo(2);
  }

  @Test
  void nearLimit_fixedWindowRefusal_countsEveryHitOver() throws Exception {
    start(Map.of());

    call(8, descriptor("user", "u"));
    call(3, descriptor("user", "u"));

    assertThat(counter("within_limit", "user")).isEqualTo(8);
    assertThat(counter("near_limit", "user")).isZero();
    assertThat(counter("over_limit", "user")).isEqualTo(3);
  }

  @Test
  void globalQuotaMode_overallOverLimitOnlyWhenEveryDescriptorIs() throws Exception {
    start(Map.of("WEIR_ENVOY_QUOTA_MODE", "true"));
    call(descriptor("images", "a.png"));

    RateLimitResponse oneOver = call(descriptor("images", "a.png"), descriptor("user", "u"));
    RateLimitResponse allOver = call(descriptor("images", "a.png"), descriptor("blocked", "b"));

    assertThat(oneOver.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(oneOver.getOverallCode()).isEqualTo(Code.OK);
    assertThat(allOver.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
  }

  @Test
  void globalQuotaMode_unmatchedDescriptorIsAPassingQuotaDescriptor() throws Exception {
    start(Map.of("WEIR_ENVOY_QUOTA_MODE", "true"));

    RateLimitResponse response = call(descriptor("blocked", "b"), descriptor("nomatch", "n"));

    assertThat(response.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(response.getOverallCode()).isEqualTo(Code.OK);
  }

  @Test
  void quotaModeRule_unmatchedDescriptorIsNoQuotaDescriptor() throws Exception {
    start(Map.of());

    RateLimitResponse response = call(descriptor("soft", "s"), descriptor("nomatch", "n"));

    assertThat(response.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(response.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
  }

  private static Value text(String s) {
    return Value.newBuilder().setStringValue(s).build();
  }

  private static Value number(double d) {
    return Value.newBuilder().setNumberValue(d).build();
  }

  private static Value list(Value... values) {
    return Value.newBuilder().setListValue(ListValue.newBuilder().addAllValues(List.of(values))).build();
  }

  private static Value struct(Map<String, Value> fields) {
    return Value.newBuilder().setStructValue(Struct.newBuilder().putAllFields(fields)).build();
  }
}
