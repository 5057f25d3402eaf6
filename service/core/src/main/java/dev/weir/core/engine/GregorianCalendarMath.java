package dev.weir.core.engine;

import dev.weir.core.model.GregorianInterval;
import java.time.DayOfWeek;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.time.temporal.ChronoUnit;
import java.time.temporal.TemporalAdjusters;

/**
 * Calendar interval boundaries in one time zone: the interval of a {@link GregorianInterval} that
 * contains an instant, as epoch milliseconds {@code [start, end)}.
 *
 * <p>Month and year lengths come from {@code java.time}, so February, leap years and
 * daylight-saving days have their true lengths. Weeks are ISO weeks, Monday 00:00 to the next
 * Monday 00:00.
 */
public final class GregorianCalendarMath {

  private final ZoneId zone;

  /** Creates calendar math for {@code zone}. */
  public GregorianCalendarMath(ZoneId zone) {
    this.zone = zone;
  }

  /** Returns the zone whose calendar this uses. */
  public ZoneId zone() {
    return zone;
  }

  /** Returns the epoch millisecond at which the interval containing {@code now} starts. */
  public long start(GregorianInterval interval, long now) {
    return millis(startOf(interval, now));
  }

  /**
   * Returns the epoch millisecond at which the interval containing {@code now} ends: the first
   * millisecond of the next interval. Gubernator's expiry is one less, the interval's last
   * millisecond.
   */
  public long end(GregorianInterval interval, long now) {
    return millis(next(interval, startOf(interval, now)));
  }

  /** Returns the length in milliseconds of the interval containing {@code now}. */
  public long length(GregorianInterval interval, long now) {
    ZonedDateTime start = startOf(interval, now);
    return SaturatingMath.sub(millis(next(interval, start)), millis(start));
  }

  private static long millis(ZonedDateTime t) {
    Instant i = t.toInstant();
    if (i.isAfter(Instant.ofEpochMilli(Long.MAX_VALUE))) {
      return Long.MAX_VALUE;
    }
    if (i.isBefore(Instant.ofEpochMilli(Long.MIN_VALUE))) {
      return Long.MIN_VALUE;
    }
    return i.toEpochMilli();
  }

  private ZonedDateTime startOf(GregorianInterval interval, long now) {
    ZonedDateTime t = Instant.ofEpochMilli(now).atZone(zone);
    LocalDate date = t.toLocalDate();
    return switch (interval) {
      case MINUTES -> truncated(t, ChronoUnit.MINUTES);
      case HOURS -> truncated(t, ChronoUnit.HOURS);
      case DAYS -> date.atStartOfDay(zone);
      case WEEKS ->
          date.with(TemporalAdjusters.previousOrSame(DayOfWeek.MONDAY)).atStartOfDay(zone);
      case MONTHS -> date.withDayOfMonth(1).atStartOfDay(zone);
      case YEARS -> date.withDayOfYear(1).atStartOfDay(zone);
    };
  }

  /**
   * Returns the start of the minute or hour of local time that contains {@code t}: its local start
   * in the zone, unless that lies after {@code t} or at another offset, and then its local start at
   * {@code t}'s own offset. A shift off the hour puts the zone's local start elsewhere: after a
   * fall-back of 30 minutes ({@code Australia/Lord_Howe}) the repeated times' hour start exists
   * only at the earlier offset, whose hour ends before them; a gap that starts at hh:01
   * ({@code America/St_Johns} until 2011) moves the hour start past the times after it.
   */
  private ZonedDateTime truncated(ZonedDateTime t, ChronoUnit unit) {
    ZonedDateTime start = t.truncatedTo(unit);
    if (!start.isAfter(t) && start.getOffset().equals(t.getOffset())) {
      return start;
    }
    return t.toOffsetDateTime().truncatedTo(unit).atZoneSameInstant(zone);
  }

  private ZonedDateTime next(GregorianInterval interval, ZonedDateTime start) {
    LocalDate date = start.toLocalDate();
    return switch (interval) {
      case MINUTES -> start.plusMinutes(1);
      case HOURS -> start.plusHours(1);
      case DAYS -> date.plusDays(1).atStartOfDay(zone);
      case WEEKS -> date.plusWeeks(1).atStartOfDay(zone);
      case MONTHS -> date.plusMonths(1).atStartOfDay(zone);
      case YEARS -> date.plusYears(1).atStartOfDay(zone);
    };
  }
}
