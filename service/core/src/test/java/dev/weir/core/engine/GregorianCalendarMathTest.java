package dev.weir.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.GregorianInterval;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;

class GregorianCalendarMathTest {

  private static final GregorianCalendarMath UTC = new GregorianCalendarMath(ZoneOffset.UTC);

  private static long ms(String isoInstant) {
    return OffsetDateTime.parse(isoInstant).toInstant().toEpochMilli();
  }

  @Test
  void minutes_midMinute_boundsTheMinute() {
    long now = ms("2026-03-15T12:34:56.789Z");
    assertThat(UTC.start(GregorianInterval.MINUTES, now)).isEqualTo(ms("2026-03-15T12:34:00Z"));
    assertThat(UTC.end(GregorianInterval.MINUTES, now)).isEqualTo(ms("2026-03-15T12:35:00Z"));
  }

  @Test
  void months_februaryOfLeapYear_has29Days() {
    assertThat(UTC.length(GregorianInterval.MONTHS, ms("2024-02-10T00:00:00Z")))
        .isEqualTo(Duration.ofDays(29).toMillis());
    assertThat(UTC.length(GregorianInterval.MONTHS, ms("2025-02-10T00:00:00Z")))
        .isEqualTo(Duration.ofDays(28).toMillis());
    assertThat(UTC.end(GregorianInterval.MONTHS, ms("2024-02-29T23:59:59.999Z")))
        .isEqualTo(ms("2024-03-01T00:00:00Z"));
  }

  @Test
  void years_lastMillisecondOfYear_belongsToThatYear() {
    long last = ms("2024-12-31T23:59:59.999Z");
    assertThat(UTC.end(GregorianInterval.YEARS, last)).isEqualTo(last + 1);
    assertThat(UTC.length(GregorianInterval.YEARS, last))
        .isEqualTo(Duration.ofDays(366).toMillis());
    assertThat(UTC.start(GregorianInterval.YEARS, last + 1)).isEqualTo(last + 1);
  }

  @Test
  void weeks_inNewYorkAcrossDaylightSaving_areMondayToMondayLocal() {
    GregorianCalendarMath ny = new GregorianCalendarMath(ZoneId.of("America/New_York"));
    long sunday = ms("2026-03-08T12:00:00-04:00");
    assertThat(ny.start(GregorianInterval.WEEKS, sunday))
        .isEqualTo(ms("2026-03-02T00:00:00-05:00"));
    assertThat(ny.end(GregorianInterval.WEEKS, sunday)).isEqualTo(ms("2026-03-09T00:00:00-04:00"));
    assertThat(ny.length(GregorianInterval.WEEKS, sunday))
        .isEqualTo(Duration.ofDays(7).minusHours(1).toMillis());
    long lastMs = ms("2026-03-08T23:59:59.999-04:00");
    assertThat(ny.end(GregorianInterval.WEEKS, lastMs)).isEqualTo(lastMs + 1);
    assertThat(ny.start(GregorianInterval.WEEKS, lastMs + 1)).isEqualTo(lastMs + 1);
  }

  @Test
  void hours_inHalfHourZone_followLocalHours() {
    GregorianCalendarMath kolkata = new GregorianCalendarMath(ZoneId.of("Asia/Kolkata"));
    long now = ms("2026-01-01T10:45:00+05:30");
    assertThat(kolkata.start(GregorianInterval.HOURS, now))
        .isEqualTo(ms("2026-01-01T10:00:00+05:30"));
    assertThat(kolkata.end(GregorianInterval.HOURS, now))
        .isEqualTo(ms("2026-01-01T11:00:00+05:30"));
  }

  @Test
  void hours_inTheRepeatedHalfHourOfLordHowesFallBack_containNow() {
    GregorianCalendarMath lordHowe = new GregorianCalendarMath(ZoneId.of("Australia/Lord_Howe"));
    long repeated = ms("2024-04-07T01:45:00+10:30");
    assertThat(lordHowe.start(GregorianInterval.HOURS, repeated))
        .isEqualTo(ms("2024-04-07T01:00:00+10:30"));
    assertThat(lordHowe.end(GregorianInterval.HOURS, repeated))
        .isEqualTo(ms("2024-04-07T02:00:00+10:30"));
  }

  @Test
  void minutesAndHours_everyQuarterHourAroundShiftsOffTheHour_containNow() {
    String[] zones = {"Australia/Lord_Howe", "America/Caracas", "America/St_Johns", "Europe/Berlin"};
    for (String zone : zones) {
      GregorianCalendarMath calendar = new GregorianCalendarMath(ZoneId.of(zone));
      long from = ms("2007-01-01T00:00:00Z");
      long to = ms("2026-12-31T00:00:00Z");
      ZoneId id = ZoneId.of(zone);
      for (var t = id.getRules().nextTransition(Instant.ofEpochMilli(from));
          t != null && t.getInstant().toEpochMilli() < to;
          t = id.getRules().nextTransition(t.getInstant())) {
        long at = t.getInstant().toEpochMilli();
        for (long now = at - 3_600_000; now <= at + 3_600_000; now += 900_000) {
          for (GregorianInterval interval :
              new GregorianInterval[] {GregorianInterval.MINUTES, GregorianInterval.HOURS}) {
            assertThat(calendar.start(interval, now))
                .as("%s %s at %s", zone, interval, Instant.ofEpochMilli(now))
                .isLessThanOrEqualTo(now);
            assertThat(calendar.end(interval, now))
                .as("%s %s at %s", zone, interval, Instant.ofEpochMilli(now))
                .isGreaterThan(now);
          }
        }
      }
    }
  }

  @Test
  void days_onSpringForwardDay_last23Hours() {
    GregorianCalendarMath berlin = new GregorianCalendarMath(ZoneId.of("Europe/Berlin"));
    assertThat(berlin.length(GregorianInterval.DAYS, ms("2026-03-29T12:00:00+02:00")))
        .isEqualTo(Duration.ofHours(23).toMillis());
  }

  @Test
  void end_atTheEndOfTime_saturates() {
    assertThat(UTC.end(GregorianInterval.YEARS, Long.MAX_VALUE)).isEqualTo(Long.MAX_VALUE);
    assertThat(UTC.start(GregorianInterval.YEARS, Long.MAX_VALUE))
        .isLessThan(Long.MAX_VALUE)
        .isEqualTo(
            Instant.ofEpochMilli(Long.MAX_VALUE)
                .atZone(ZoneOffset.UTC)
                .withDayOfYear(1)
                .toLocalDate()
                .atStartOfDay(ZoneOffset.UTC)
                .toInstant()
                .toEpochMilli());
  }
}
