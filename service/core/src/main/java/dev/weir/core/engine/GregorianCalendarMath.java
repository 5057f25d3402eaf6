package dev.weir.core.engine;

import dev.weir.core.model.GregorianInterval;
import java.time.DayOfWeek;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.time.temporal.TemporalAdjusters;

/**
 * Calendar interval boundaries in one time zone: the interval of a {@link GregorianInterval} that
 * contains an instant, as epoch milliseconds {@code [start, end)}.
 *
 * <p>Month and year lengths come from {@code java.time}, so February, leap years and
 * daylight-saving days have their true lengths. Weeks are ISO weeks, Monday 00:00 to the next
 * Monday 00:00. Minutes and hours follow the local clock and partition time even across
 * daylight-saving shifts off the hour ({@link HourAndMinuteBoundaries}).
 */
public final class GregorianCalendarMath {

  private final ZoneId zone;
  private final HourAndMinuteBoundaries clock;

  /** Creates calendar math for {@code zone}. */
  public GregorianCalendarMath(ZoneId zone) {
    this.zone = zone;
    this.clock = new HourAndMinuteBoundaries(zone.getRules());
  }

  /** Returns the zone whose calendar this uses. */
  public ZoneId zone() {
    return zone;
  }

  /** Returns the epoch millisecond at which the interval containing {@code now} starts. */
  public long start(GregorianInterval interval, long now) {
    return switch (interval) {
      case MINUTES -> clock.start(HourAndMinuteBoundaries.MINUTE, now);
      case HOURS -> clock.start(HourAndMinuteBoundaries.HOUR, now);
      default -> millis(startOf(interval, now));
    };
  }

  /**
   * Returns the epoch millisecond at which the interval containing {@code now} ends: the first
   * millisecond of the next interval. Gubernator's expiry is one less, the interval's last
   * millisecond.
   */
  public long end(GregorianInterval interval, long now) {
    return switch (interval) {
      case MINUTES -> clock.end(HourAndMinuteBoundaries.MINUTE, now);
      case HOURS -> clock.end(HourAndMinuteBoundaries.HOUR, now);
      default -> millis(next(interval, startOf(interval, now)));
    };
  }

  /** Returns the length in milliseconds of the interval containing {@code now}. */
  public long length(GregorianInterval interval, long now) {
    if (interval == GregorianInterval.MINUTES || interval == GregorianInterval.HOURS) {
      return SaturatingMath.sub(end(interval, now), start(interval, now));
    }
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
      case MINUTES, HOURS -> throw new IllegalArgumentException(interval + " is a clock unit");
      case DAYS -> date.atStartOfDay(zone);
      case WEEKS ->
          date.with(TemporalAdjusters.previousOrSame(DayOfWeek.MONDAY)).atStartOfDay(zone);
      case MONTHS -> date.withDayOfMonth(1).atStartOfDay(zone);
      case YEARS -> date.withDayOfYear(1).atStartOfDay(zone);
    };
  }

  private ZonedDateTime next(GregorianInterval interval, ZonedDateTime start) {
    LocalDate date = start.toLocalDate();
    return switch (interval) {
      case MINUTES, HOURS -> throw new IllegalArgumentException(interval + " is a clock unit");
      case DAYS -> date.plusDays(1).atStartOfDay(zone);
      case WEEKS -> date.plusWeeks(1).atStartOfDay(zone);
      case MONTHS -> date.plusMonths(1).atStartOfDay(zone);
      case YEARS -> date.plusYears(1).atStartOfDay(zone);
    };
  }
}
