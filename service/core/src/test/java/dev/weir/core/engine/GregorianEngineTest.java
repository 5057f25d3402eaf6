package dev.weir.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.Algorithm;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.GregorianInterval;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;

class GregorianEngineTest {

  private static final int GREGORIAN = Behavior.DURATION_IS_GREGORIAN;

  private static long ms(String isoInstant) {
    return OffsetDateTime.parse(isoInstant).toInstant().toEpochMilli();
  }

  private static RateLimitRequest req(Algorithm a, long limit, GregorianInterval g, long hits) {
    return Requests.of(a, limit, g.code(), hits).behavior(GREGORIAN).build();
  }

  @Test
  void tokenBucket_minutes_resetsAtTheLastMillisecondOfTheMinute() {
    Scenario s = new Scenario();
    RateLimitResponse r =
        s.send(
            req(Algorithm.TOKEN_BUCKET, 2, GregorianInterval.MINUTES, 2),
            ms("2026-03-15T12:34:56.789Z"));
    assertThat(r)
        .isEqualTo(RateLimitResponse.of(Status.UNDER_LIMIT, 2, 0, ms("2026-03-15T12:34:59.999Z")));
    assertThat(
            s.send(
                    req(Algorithm.TOKEN_BUCKET, 2, GregorianInterval.MINUTES, 1),
                    ms("2026-03-15T12:34:59.999Z"))
                .status())
        .isEqualTo(Status.OVER_LIMIT);
    assertThat(
            s.send(
                req(Algorithm.TOKEN_BUCKET, 2, GregorianInterval.MINUTES, 1),
                ms("2026-03-15T12:35:00Z")))
        .isEqualTo(RateLimitResponse.of(Status.UNDER_LIMIT, 2, 1, ms("2026-03-15T12:35:59.999Z")));
  }

  @Test
  void tokenBucket_weeksInTokyo_endSundayLocal() {
    Scenario s = new Scenario(new RateLimitEngine(ZoneId.of("Asia/Tokyo")));
    RateLimitResponse r =
        s.send(
            req(Algorithm.TOKEN_BUCKET, 5, GregorianInterval.WEEKS, 1), ms("2026-03-01T20:00:00Z"));
    assertThat(r.resetTime()).isEqualTo(ms("2026-03-08T23:59:59.999+09:00"));
  }

  @Test
  void tokenBucket_yearEnd_startsANewWindowAtNewYear() {
    Scenario s = new Scenario();
    long last = ms("2024-12-31T23:59:59.999Z");
    assertThat(s.send(req(Algorithm.TOKEN_BUCKET, 1, GregorianInterval.YEARS, 1), last).resetTime())
        .isEqualTo(last);
    assertThat(s.send(req(Algorithm.TOKEN_BUCKET, 1, GregorianInterval.YEARS, 1), last + 1))
        .isEqualTo(RateLimitResponse.of(Status.UNDER_LIMIT, 1, 0, ms("2025-12-31T23:59:59.999Z")));
  }

  @Test
  void leakyBucket_monthsInLeapFebruary_leaksAtMonthLengthOverLimit() {
    Scenario s = new Scenario();
    long now = ms("2024-02-10T00:00:00Z");
    RateLimitResponse first =
        s.send(req(Algorithm.LEAKY_BUCKET, 29, GregorianInterval.MONTHS, 29), now);
    assertThat(first)
        .isEqualTo(
            RateLimitResponse.of(Status.UNDER_LIMIT, 29, 0, now + Duration.ofDays(29).toMillis()));
    assertThat(s.state().expireAt()).isEqualTo(ms("2024-03-01T00:00:00Z"));
    long dayLater = now + Duration.ofDays(1).toMillis();
    assertThat(
            s.send(req(Algorithm.LEAKY_BUCKET, 29, GregorianInterval.MONTHS, 0), dayLater)
                .remaining())
        .isEqualTo(1);
    assertThat(
            s.send(req(Algorithm.LEAKY_BUCKET, 29, GregorianInterval.MONTHS, 0), dayLater - 1)
                .remaining())
        .isEqualTo(1);
  }

  @Test
  void fixedWindow_hours_windowIsTheLocalHour() {
    Scenario s = new Scenario(new RateLimitEngine(ZoneId.of("Asia/Kolkata")));
    RateLimitResponse r =
        s.send(
            req(Algorithm.FIXED_WINDOW, 3, GregorianInterval.HOURS, 1),
            ms("2026-01-01T10:45:00+05:30"));
    assertThat(r)
        .isEqualTo(RateLimitResponse.of(Status.UNDER_LIMIT, 3, 2, ms("2026-01-01T11:00:00+05:30")));
    assertThat(s.state())
        .isEqualTo(
            new FixedWindowState(
                3, 1, ms("2026-01-01T10:00:00+05:30"), 1, ms("2026-01-01T11:00:00+05:30")));
  }

  @Test
  void tokenBucket_hoursInTheRepeatedHalfHourOfLordHowesFallBack_keepsTheCount() {
    Scenario s = new Scenario(new RateLimitEngine(ZoneId.of("Australia/Lord_Howe")));
    long repeated = ms("2024-04-07T01:45:00+10:30");
    RateLimitResponse first =
        s.send(req(Algorithm.TOKEN_BUCKET, 2, GregorianInterval.HOURS, 2), repeated);
    assertThat(first)
        .isEqualTo(
            RateLimitResponse.of(Status.UNDER_LIMIT, 2, 0, ms("2024-04-07T01:59:59.999+10:30")));
    assertThat(s.send(req(Algorithm.TOKEN_BUCKET, 2, GregorianInterval.HOURS, 1), repeated + 1))
        .isEqualTo(
            RateLimitResponse.of(Status.OVER_LIMIT, 2, 0, ms("2024-04-07T01:59:59.999+10:30")));
  }

  @Test
  void fixedWindow_hoursInTheRepeatedHalfHourOfLordHowesFallBack_countsBothHits() {
    Scenario s = new Scenario(new RateLimitEngine(ZoneId.of("Australia/Lord_Howe")));
    long repeated = ms("2024-04-07T01:45:00+10:30");
    s.send(req(Algorithm.FIXED_WINDOW, 1, GregorianInterval.HOURS, 1), repeated);
    assertThat(s.send(req(Algorithm.FIXED_WINDOW, 1, GregorianInterval.HOURS, 1), repeated + 1))
        .isEqualTo(RateLimitResponse.of(Status.OVER_LIMIT, 1, 0, ms("2024-04-07T02:00:00+10:30")));
  }

  @Test
  void fixedWindow_hours_anOlderRequestAfterOneInTheRepeatedHalfHour_keepsTheCount() {
    Scenario s = new Scenario(new RateLimitEngine(ZoneId.of("Australia/Lord_Howe")));
    long secondPass = ms("2024-04-06T15:00:00.010Z");
    long secondPassEnd = ms("2024-04-07T02:00:00+10:30");
    assertThat(s.send(req(Algorithm.FIXED_WINDOW, 10, GregorianInterval.HOURS, 10), secondPass))
        .isEqualTo(RateLimitResponse.of(Status.UNDER_LIMIT, 10, 0, secondPassEnd));
    assertThat(
            s.send(
                req(Algorithm.FIXED_WINDOW, 10, GregorianInterval.HOURS, 1),
                ms("2024-04-06T14:59:59.990Z")))
        .isEqualTo(RateLimitResponse.of(Status.OVER_LIMIT, 10, 0, secondPassEnd));
    assertThat(s.send(req(Algorithm.FIXED_WINDOW, 10, GregorianInterval.HOURS, 1), secondPass + 10))
        .isEqualTo(RateLimitResponse.of(Status.OVER_LIMIT, 10, 0, secondPassEnd));
  }

  @Test
  void slidingWindow_hours_anOlderRequestAfterOneInTheRepeatedHalfHour_isRefused() {
    Scenario s = new Scenario(new RateLimitEngine(ZoneId.of("Australia/Lord_Howe")));
    long secondPassEnd = ms("2024-04-07T02:00:00+10:30");
    assertThat(
            s.send(
                req(Algorithm.SLIDING_WINDOW, 10, GregorianInterval.HOURS, 10),
                ms("2024-04-06T15:00:00.010Z")))
        .isEqualTo(RateLimitResponse.of(Status.UNDER_LIMIT, 10, 0, secondPassEnd));
    assertThat(
            s.send(
                req(Algorithm.SLIDING_WINDOW, 10, GregorianInterval.HOURS, 1),
                ms("2024-04-06T14:59:59.990Z")))
        .isEqualTo(RateLimitResponse.of(Status.OVER_LIMIT, 10, 0, secondPassEnd));
  }

  @Test
  void slidingWindow_hours_atLordHowesFallBack_weighsTheHourJustEndedInFull() {
    Scenario s = new Scenario(new RateLimitEngine(ZoneId.of("Australia/Lord_Howe")));
    s.send(
        req(Algorithm.SLIDING_WINDOW, 10, GregorianInterval.HOURS, 10),
        ms("2024-04-07T01:59:00+11:00"));
    assertThat(
            s.send(
                req(Algorithm.SLIDING_WINDOW, 10, GregorianInterval.HOURS, 5),
                ms("2024-04-07T01:30:00+10:30")))
        .isEqualTo(RateLimitResponse.of(Status.OVER_LIMIT, 10, 0, ms("2024-04-07T02:00:00+10:30")));
  }

  @Test
  void slidingWindow_months_weighsFebruaryByTheShareOfMarchToCome() {
    Scenario s = new Scenario();
    s.send(
        req(Algorithm.SLIDING_WINDOW, 100, GregorianInterval.MONTHS, 100),
        ms("2024-02-20T00:00:00Z"));
    RateLimitResponse r =
        s.send(
            req(Algorithm.SLIDING_WINDOW, 100, GregorianInterval.MONTHS, 0),
            ms("2024-03-16T12:00:00Z"));
    assertThat(r)
        .isEqualTo(RateLimitResponse.of(Status.UNDER_LIMIT, 100, 50, ms("2024-04-01T00:00:00Z")));
  }

  @Test
  void apply_invalidGregorianCode_isGubernatorsErrorWithTheValueAndTheCodesAllowed() {
    RateLimitRequest bad = Requests.of(Algorithm.TOKEN_BUCKET, 1, 6, 1).behavior(GREGORIAN).build();
    Decision d = new RateLimitEngine(ZoneOffset.UTC).apply(null, bad, Requests.NOW);
    assertThat(d.response().error())
        .isEqualTo(
            "behavior DURATION_IS_GREGORIAN is set; but `Duration` is not a valid gregorian"
                + " interval: got 6; allowed are 0 (minute), 1 (hour), 2 (day),"
                + " 3 (week), 4 (month), 5 (year)");
    assertThat(d.next()).isNull();
  }

  private static RateLimitRequest zoned(
      Algorithm a, long limit, GregorianInterval g, long hits, String zone) {
    return Requests.of(a, limit, g.code(), hits)
        .behavior(GREGORIAN)
        .metadata(java.util.Map.of(GregorianInterval.TIME_ZONE_METADATA, zone))
        .build();
  }

  @Test
  void fixedWindow_timeZoneMetadata_overridesTheEngineZone_dstDayIs23Hours() {
    Scenario s = new Scenario(new RateLimitEngine(ZoneId.of("Asia/Tokyo")));
    long now = ms("2026-03-29T12:00:00+02:00");

    RateLimitResponse r =
        s.send(zoned(Algorithm.FIXED_WINDOW, 3, GregorianInterval.DAYS, 1, "Europe/Berlin"), now);

    assertThat(r.resetTime()).isEqualTo(ms("2026-03-30T00:00:00+02:00"));
    assertThat(s.state().expireAt() - ms("2026-03-29T00:00:00+01:00"))
        .isEqualTo(Duration.ofHours(23).toMillis());
  }

  @Test
  void tokenBucket_timeZoneMetadata_monthEndsAtLocalMidnightOfTheFirst() {
    Scenario s = new Scenario();

    RateLimitResponse r =
        s.send(
            zoned(Algorithm.TOKEN_BUCKET, 3, GregorianInterval.MONTHS, 1, "America/New_York"),
            ms("2026-01-31T23:30:00-05:00"));

    assertThat(r.resetTime()).isEqualTo(ms("2026-02-01T00:00:00-05:00") - 1);
  }

  @Test
  void unknownTimeZoneMetadata_perItemErrorNamingTheValue() {
    Decision d =
        new RateLimitEngine(ZoneOffset.UTC)
            .apply(
                null,
                zoned(Algorithm.FIXED_WINDOW, 3, GregorianInterval.DAYS, 1, "Mars/Olympus"),
                0);

    assertThat(d.response().error())
        .isEqualTo(
            "metadata time_zone 'Mars/Olympus' is not a time zone: expected a zone id such as"
                + " Europe/Berlin or UTC, or an offset such as +02:00");
    assertThat(d.next()).isNull();
  }

  @Test
  void timeZoneMetadataWithoutGregorian_ignored() {
    Decision d =
        new RateLimitEngine(ZoneOffset.UTC)
            .apply(
                null,
                Requests.of(Algorithm.FIXED_WINDOW, 3, 1000, 1)
                    .metadata(java.util.Map.of(GregorianInterval.TIME_ZONE_METADATA, "Mars"))
                    .build(),
                0);

    assertThat(d.response().error()).isEmpty();
  }
}
