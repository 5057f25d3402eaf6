package dev.weir.core.model;

import java.util.Optional;

/** A calendar interval, the meaning of {@code duration} when {@link Behavior#DURATION_IS_GREGORIAN} is set. */
public enum GregorianInterval {
  MINUTES(0),
  HOURS(1),
  DAYS(2),
  /** ISO weeks, Monday 00:00 to Sunday 23:59:59.999. */
  WEEKS(3),
  MONTHS(4),
  YEARS(5);

  /**
   * The request metadata key that names the time zone of a Gregorian request's intervals (a zone
   * id such as {@code Europe/Berlin} or {@code UTC}, or an offset such as {@code +02:00}); without
   * it the engine's zone applies.
   */
  public static final String TIME_ZONE_METADATA = "time_zone";

  private final int code;

  GregorianInterval(int code) {
    this.code = code;
  }

  /** Returns the wire code of this interval. */
  public int code() {
    return code;
  }

  /** Returns the interval with wire code {@code code}, or empty when there is none. */
  public static Optional<GregorianInterval> forCode(long code) {
    for (GregorianInterval g : values()) {
      if (g.code == code) {
        return Optional.of(g);
      }
    }
    return Optional.empty();
  }
}
