package dev.weir.core.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.weir.core.model.GregorianInterval;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.temporal.ChronoUnit;
import java.time.zone.ZoneRules;
import java.util.ArrayList;
import java.util.List;
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
  void minutesAndHours_atTheEndsOfTime_endWhereTheNextUnitStarts() {
    for (GregorianInterval unit : List.of(GregorianInterval.MINUTES, GregorianInterval.HOURS)) {
      long first = UTC.end(unit, Long.MIN_VALUE);
      assertThat(first).as("%s: end of the unit holding Long.MIN_VALUE", unit)
          .isEqualTo(Long.MIN_VALUE - Math.floorMod(Long.MIN_VALUE, millisOf(unit)) + millisOf(unit));
      assertThat(UTC.start(unit, first)).as("%s: the next unit starts there", unit).isEqualTo(first);
      assertThat(UTC.end(unit, Long.MAX_VALUE)).as("%s at Long.MAX_VALUE", unit)
          .isEqualTo(Long.MAX_VALUE);
      assertThat(UTC.start(unit, Long.MAX_VALUE)).as("%s at Long.MAX_VALUE", unit)
          .isEqualTo(Long.MAX_VALUE - Math.floorMod(Long.MAX_VALUE, millisOf(unit)));
    }
  }

  private static long millisOf(GregorianInterval unit) {
    return unit == GregorianInterval.MINUTES ? 60_000 : 3_600_000;
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
  void hours_aroundLordHowesFallBack_splitAtTheFallBack() {
    GregorianCalendarMath lordHowe = new GregorianCalendarMath(ZoneId.of("Australia/Lord_Howe"));
    long firstPass = ms("2024-04-07T01:45:00+11:00");
    assertThat(lordHowe.start(GregorianInterval.HOURS, firstPass))
        .isEqualTo(ms("2024-04-07T01:00:00+11:00"));
    assertThat(lordHowe.end(GregorianInterval.HOURS, firstPass))
        .isEqualTo(ms("2024-04-07T02:00:00+11:00"));
    long secondPass = ms("2024-04-07T01:45:00+10:30");
    assertThat(lordHowe.start(GregorianInterval.HOURS, secondPass))
        .isEqualTo(ms("2024-04-07T02:00:00+11:00"))
        .isEqualTo(ms("2024-04-07T01:30:00+10:30"));
    assertThat(lordHowe.end(GregorianInterval.HOURS, secondPass))
        .isEqualTo(ms("2024-04-07T02:00:00+10:30"));
    assertThat(lordHowe.length(GregorianInterval.HOURS, secondPass))
        .isEqualTo(Duration.ofMinutes(30).toMillis());
  }

  @Test
  void hours_aroundLordHowesSpringForward_splitAtTheShift() {
    GregorianCalendarMath lordHowe = new GregorianCalendarMath(ZoneId.of("Australia/Lord_Howe"));
    long before = ms("2024-10-06T01:45:00+10:30");
    assertThat(lordHowe.start(GregorianInterval.HOURS, before))
        .isEqualTo(ms("2024-10-06T01:00:00+10:30"));
    assertThat(lordHowe.end(GregorianInterval.HOURS, before))
        .isEqualTo(ms("2024-10-06T02:30:00+11:00"));
    long after = ms("2024-10-06T02:45:00+11:00");
    assertThat(lordHowe.start(GregorianInterval.HOURS, after))
        .isEqualTo(ms("2024-10-06T02:30:00+11:00"));
    assertThat(lordHowe.end(GregorianInterval.HOURS, after))
        .isEqualTo(ms("2024-10-06T03:00:00+11:00"));
  }

  @Test
  void hours_aroundStJohnsShiftsAtOneMinutePastMidnight_lastOneAbsoluteHour() {
    GregorianCalendarMath stJohns = new GregorianCalendarMath(ZoneId.of("America/St_Johns"));
    for (String now : new String[] {"2010-03-14T00:00:30-03:30", "2010-03-14T01:30:00-02:30"}) {
      assertThat(stJohns.start(GregorianInterval.HOURS, ms(now)))
          .as(now)
          .isEqualTo(ms("2010-03-14T00:00:00-03:30"));
      assertThat(stJohns.end(GregorianInterval.HOURS, ms(now)))
          .as(now)
          .isEqualTo(ms("2010-03-14T02:00:00-02:30"));
    }
    for (String now : new String[] {"2010-11-07T00:00:30-02:30", "2010-11-06T23:30:00-03:30"}) {
      assertThat(stJohns.start(GregorianInterval.HOURS, ms(now)))
          .as(now)
          .isEqualTo(ms("2010-11-07T00:00:00-02:30"));
      assertThat(stJohns.end(GregorianInterval.HOURS, ms(now)))
          .as(now)
          .isEqualTo(ms("2010-11-07T00:00:00-03:30"));
    }
  }

  @Test
  void minutesAndHours_everyMinuteAroundShiftsSince1970_partitionTime() {
    String[] zones = {
      "Australia/Lord_Howe",
      "America/St_Johns",
      "America/Moncton",
      "America/Caracas",
      "Asia/Kathmandu",
      "Pacific/Chatham",
      "Europe/Berlin",
      "America/New_York"
    };
    for (String zone : zones) {
      GregorianCalendarMath calendar = new GregorianCalendarMath(ZoneId.of(zone));
      for (long now : minutesAroundShifts(ZoneId.of(zone))) {
        for (GregorianInterval interval : CLOCK_UNITS) {
          long start = calendar.start(interval, now);
          long end = calendar.end(interval, now);
          boolean partitions =
              start <= now
                  && end > now
                  && calendar.start(interval, start) == start
                  && calendar.end(interval, start) == end
                  && calendar.start(interval, end - 1) == start
                  && calendar.start(interval, end) == end
                  && calendar.end(interval, start - 1) == start;
          if (!partitions) {
            fail(
                "%s %s at %s: [%s, %s), the next starts at %s, the previous ends at %s",
                zone,
                interval,
                Instant.ofEpochMilli(now),
                Instant.ofEpochMilli(start),
                Instant.ofEpochMilli(end),
                Instant.ofEpochMilli(calendar.start(interval, end)),
                Instant.ofEpochMilli(calendar.end(interval, start - 1)));
          }
        }
      }
    }
  }

  @Test
  void minutesAndHours_inWholeHourZones_areTheLocalClocksTruncation() {
    for (String zone : new String[] {"Europe/Berlin", "America/New_York"}) {
      ZoneId id = ZoneId.of(zone);
      GregorianCalendarMath calendar = new GregorianCalendarMath(id);
      for (long minute : minutesAroundShifts(id)) {
        for (long now : new long[] {minute, minute - 1}) {
          ZonedDateTime local = Instant.ofEpochMilli(now).atZone(id);
          ZonedDateTime hour = local.truncatedTo(ChronoUnit.HOURS);
          ZonedDateTime min = local.truncatedTo(ChronoUnit.MINUTES);
          assertThat(calendar.start(GregorianInterval.HOURS, now))
              .as("hour start in %s at %s", zone, local)
              .isEqualTo(epochMilli(hour));
          assertThat(calendar.end(GregorianInterval.HOURS, now))
              .as("hour end in %s at %s", zone, local)
              .isEqualTo(epochMilli(hour.plusHours(1)));
          assertThat(calendar.start(GregorianInterval.MINUTES, now))
              .as("minute start in %s at %s", zone, local)
              .isEqualTo(epochMilli(min));
          assertThat(calendar.end(GregorianInterval.MINUTES, now))
              .as("minute end in %s at %s", zone, local)
              .isEqualTo(epochMilli(min.plusMinutes(1)));
        }
      }
    }
  }

  private static final GregorianInterval[] CLOCK_UNITS = {
    GregorianInterval.MINUTES, GregorianInterval.HOURS
  };

  private static long epochMilli(ZonedDateTime t) {
    return t.toInstant().toEpochMilli();
  }

  /**
   * Every minute from 90 minutes before to 90 minutes after each shift of {@code zone}, 1970-2030.
   */
  private static List<Long> minutesAroundShifts(ZoneId zone) {
    List<Long> minutes = new ArrayList<>();
    ZoneRules rules = zone.getRules();
    long to = ms("2030-01-01T00:00:00Z");
    for (var t = rules.nextTransition(Instant.ofEpochMilli(ms("1970-01-01T00:00:00Z")));
        t != null && t.getInstant().toEpochMilli() < to;
        t = rules.nextTransition(t.getInstant())) {
      long at = t.getInstant().toEpochMilli();
      for (long now = at - 5_400_000; now <= at + 5_400_000; now += 60_000) {
        minutes.add(now);
      }
    }
    assertThat(minutes).as(zone.getId()).isNotEmpty();
    return minutes;
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
