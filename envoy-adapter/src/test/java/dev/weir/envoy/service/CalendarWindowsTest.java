package dev.weir.envoy.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.LocalRateLimitService;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.testkit.RateLimitFieldsSyntax;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Descriptor rules with {@code calendar: true}, answered over the real local engine and store with
 * a fake clock: windows end on calendar boundaries (the 1st of a month, Monday 00:00, New Year) in
 * UTC or the rule's zone, daylight-saving days included. The engine's own zone is Asia/Tokyo, so a
 * rule that followed it instead of its own would fail.
 */
class CalendarWindowsTest {

  private static final String YAML =
      """
      domain: shop
      descriptors:
        - key: monthly
          rate_limit: {unit: month, requests_per_unit: 2, calendar: true}
        - key: daily_berlin
          rate_limit: {unit: day, requests_per_unit: 2, calendar: true, time_zone: Europe/Berlin}
        - key: weekly_berlin
          rate_limit: {unit: week, requests_per_unit: 1, calendar: true, time_zone: Europe/Berlin}
        - key: yearly
          rate_limit: {unit: year, requests_per_unit: 1, calendar: true, algorithm: token_bucket}
        - key: fixed_month
          rate_limit: {unit: month, requests_per_unit: 2}
      """;

  private final FakeClock clock = new FakeClock(0);
  private ShouldRateLimitHandler handler;

  private void start(Map<String, String> env) throws Exception {
    EnvoySettings settings = EnvoySettings.fromEnvironment(env);
    ConfigHolder config = new ConfigHolder();
    config.set(
        new ConfigLoader(settings.loadOptions()).compile(List.of(new ConfigFile("s.yaml", YAML))));
    handler =
        new ShouldRateLimitHandler(
            config,
            new LocalRateLimitService(
                new LocalLimiter(
                    new RateLimitEngine(ZoneId.of("Asia/Tokyo")),
                    new InMemoryBucketStore(clock),
                    clock),
                "a:1"),
            clock,
            settings,
            new EnvoyMetrics(new SimpleMeterRegistry()));
  }

  private void at(String instant) {
    clock.advanceMillis(
        OffsetDateTime.parse(instant).toInstant().toEpochMilli() - clock.wallMillis());
  }

  private DescriptorStatus call(String key) {
    return callResponse(key).getStatuses(0);
  }

  private io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse callResponse(String key) {
    return handler
        .decide(
            RateLimitRequest.newBuilder()
                .setDomain("shop")
                .addDescriptors(
                    RateLimitDescriptor.newBuilder()
                        .addEntries(
                            RateLimitDescriptor.Entry.newBuilder().setKey(key).setValue("u1")))
                .build())
        .join();
  }

  private static long hours(long h) {
    return Duration.ofHours(h).toSeconds();
  }

  @Test
  void month_budgetSpentOnThe31st_resetsOnThe1stInUtc() throws Exception {
    start(Map.of());
    at("2026-01-31T22:00:00Z");
    call("monthly");
    DescriptorStatus second = call("monthly");
    DescriptorStatus third = call("monthly");
    at("2026-02-01T00:00:00Z");
    DescriptorStatus february = call("monthly");

    assertThat(second.getCode()).isEqualTo(Code.OK);
    assertThat(third.getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(third.getDurationUntilReset().getSeconds()).isEqualTo(hours(2));
    assertThat(february.getCode()).isEqualTo(Code.OK);
    assertThat(february.getLimitRemaining()).isEqualTo(1);
    assertThat(february.getDurationUntilReset().getSeconds()).isEqualTo(hours(28 * 24));
  }

  @Test
  void month_leapFebruary_endsAfterThe29th() throws Exception {
    start(Map.of());
    at("2028-02-29T12:00:00Z");

    assertThat(call("monthly").getDurationUntilReset().getSeconds()).isEqualTo(hours(12));
  }

  @Test
  void fixedMonth_withoutCalendar_stays30DayBlocksFromTheEpoch() throws Exception {
    start(Map.of());
    at("2026-01-31T22:00:00Z");

    long epochDays = OffsetDateTime.parse("2026-01-31T22:00:00Z").toEpochSecond() / 86_400;
    long blockEnd = (epochDays / 30 + 1) * 30 * 86_400;
    assertThat(call("fixed_month").getDurationUntilReset().getSeconds())
        .isEqualTo(blockEnd - OffsetDateTime.parse("2026-01-31T22:00:00Z").toEpochSecond());
  }

  @Test
  void day_inBerlin_springForwardDayHas23Hours_fallBackDay25() throws Exception {
    start(Map.of());
    at("2026-03-29T00:00:00+01:00");
    DescriptorStatus spring = call("daily_berlin");
    at("2026-10-25T00:00:00+02:00");
    DescriptorStatus autumn = call("daily_berlin");

    assertThat(spring.getDurationUntilReset().getSeconds()).isEqualTo(hours(23));
    assertThat(autumn.getDurationUntilReset().getSeconds()).isEqualTo(hours(25));
  }

  @Test
  void day_inBerlin_resetsAtLocalMidnight_notUtcOrTheEngineZone() throws Exception {
    start(Map.of());
    at("2026-07-01T23:30:00+02:00");
    call("daily_berlin");
    call("daily_berlin");
    DescriptorStatus over = call("daily_berlin");
    at("2026-07-02T00:00:00+02:00");
    DescriptorStatus nextDay = call("daily_berlin");

    assertThat(over.getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(over.getDurationUntilReset().getSeconds()).isEqualTo(1800);
    assertThat(nextDay.getCode()).isEqualTo(Code.OK);
  }

  @Test
  void week_isoMondayStart_inBerlin() throws Exception {
    start(Map.of());
    at("2026-03-08T23:59:00+01:00");
    call("weekly_berlin");
    DescriptorStatus sundayNight = call("weekly_berlin");
    at("2026-03-09T00:00:00+01:00");
    DescriptorStatus monday = call("weekly_berlin");

    assertThat(sundayNight.getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(sundayNight.getDurationUntilReset().getSeconds()).isEqualTo(60);
    assertThat(monday.getCode()).isEqualTo(Code.OK);
    assertThat(monday.getDurationUntilReset().getSeconds()).isEqualTo(hours(7 * 24));
  }

  @Test
  void year_tokenBucket_endsAtNewYearInUtc() throws Exception {
    start(Map.of());
    at("2026-12-31T23:59:59Z");
    DescriptorStatus first = call("yearly");
    DescriptorStatus second = call("yearly");
    at("2027-01-01T00:00:00Z");
    DescriptorStatus newYear = call("yearly");

    assertThat(first.getCode()).isEqualTo(Code.OK);
    assertThat(first.getDurationUntilReset().getSeconds()).isEqualTo(1);
    assertThat(second.getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(newYear.getCode()).isEqualTo(Code.OK);
    assertThat(newYear.getDurationUntilReset().getSeconds()).isEqualTo(hours(365 * 24));
  }

  @Test
  void ietfHeaders_calendarWindow_isTheCurrentIntervalsLength() throws Exception {
    start(
        Map.of(
            "WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_ENABLED", "true",
            "WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_FORMAT", "ietf"));
    at("2028-02-10T00:00:00Z");

    List<HeaderValue> headers = callResponse("monthly").getResponseHeadersToAddList();

    assertThat(RateLimitFieldsSyntax.policy(headers.get(0).getValue()))
        .extracting(Object::toString)
        .containsExactly("monthly;q=2;w=" + hours(29 * 24));
    assertThat(RateLimitFieldsSyntax.limit(headers.get(1).getValue()))
        .extracting(Object::toString)
        .containsExactly("monthly;r=1;t=" + hours(20 * 24));
  }
}
