package dev.weir.core.engine;

import static dev.weir.core.engine.SaturatingMath.add;
import static dev.weir.core.engine.SaturatingMath.sub;

import java.time.Instant;
import java.time.zone.ZoneRules;

/**
 * Minute and hour boundaries in one zone's local time: the minute or hour that contains an instant
 * is the local clock's {@code hh:mm} or {@code hh:00} unit at the instant's own offset, one
 * absolute unit long, cut where a daylight-saving shift that is not a whole number of units falls
 * inside it.
 *
 * <p>These units partition time: each contains its own start and the next one starts where it ends.
 * A shift of whole units (every shift of {@code Europe/Berlin}, and {@code America/St_Johns}'s
 * 00:01 shifts before 2011) keeps the local units on the same absolute grid, so the unit across it
 * stays whole. Any other shift ({@code Australia/Lord_Howe}'s 30 minutes) moves the grid: the unit
 * before it ends at the shift and the unit after it starts there, so such a Lord_Howe hour lasts 30
 * minutes. This relies on a zone never changing its offset twice within an hour, which holds for
 * every zone of the tz database from 1900 to 2100.
 */
final class HourAndMinuteBoundaries {

  /** One minute in milliseconds. */
  static final long MINUTE = 60_000;

  /** One hour in milliseconds. */
  static final long HOUR = 3_600_000;

  private final ZoneRules rules;

  /** Creates the boundaries of the zone whose rules are {@code rules}. */
  HourAndMinuteBoundaries(ZoneRules rules) {
    this.rules = rules;
  }

  /**
   * Returns the epoch millisecond at which the {@code unit} ({@link #MINUTE} or {@link #HOUR})
   * containing {@code now} starts.
   */
  long start(long unit, long now) {
    int offset = offsetAt(now);
    long localStart = localStart(unit, now, offset);
    if (sameGrid(offsetAt(localStart), offset, unit)) {
      return localStart;
    }
    return rules.previousTransition(Instant.ofEpochMilli(now).plusNanos(1)).toEpochSecond() * 1000;
  }

  /** Returns the first epoch millisecond after the {@code unit} containing {@code now}. */
  long end(long unit, long now) {
    int offset = offsetAt(now);
    long localEnd = add(now, unit - intoUnit(unit, now, offset));
    if (sameGrid(offsetAt(localEnd - 1), offset, unit)) {
      return localEnd;
    }
    return rules.nextTransition(Instant.ofEpochMilli(now)).toEpochSecond() * 1000;
  }

  private int offsetAt(long epochMilli) {
    return rules.getOffset(Instant.ofEpochMilli(epochMilli)).getTotalSeconds();
  }

  /**
   * Returns the start of the local {@code unit} containing {@code now} at {@code offset} seconds.
   */
  private static long localStart(long unit, long now, int offset) {
    return sub(now, intoUnit(unit, now, offset));
  }

  /** Returns how far {@code now} lies into its local {@code unit} at {@code offset} seconds. */
  private static long intoUnit(long unit, long now, int offset) {
    return Math.floorMod(Math.floorMod(now, unit) + offset * 1000L, unit);
  }

  private static boolean sameGrid(int offset, int other, long unit) {
    return (offset - other) * 1000L % unit == 0;
  }
}
