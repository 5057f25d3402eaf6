package dev.weir.core.engine;

import dev.weir.core.model.GregorianInterval;
import dev.weir.core.model.RateLimitRequest;
import java.time.ZoneId;
import java.util.HashMap;
import java.util.Map;

/**
 * The calendars Gregorian requests are evaluated in: the engine's zone, or the zone a request names
 * in its {@link GregorianInterval#TIME_ZONE_METADATA} metadata entry (checked by {@link
 * RequestValidator} before a request gets here).
 */
final class Calendars {

  /** How many named zones keep their calendar; others are built for each request. */
  private static final int MAX_CACHED = 256;

  private final GregorianCalendarMath engineZone;
  /** The named zones' calendars, replaced whole when one is added (rarely), so reads take no lock. */
  private volatile Map<String, GregorianCalendarMath> named = Map.of();

  /** Creates the calendars of an engine whose own zone is {@code zone}. */
  Calendars(ZoneId zone) {
    this.engineZone = new GregorianCalendarMath(zone);
  }

  /** Returns the calendar of {@code r}, a request with {@code DURATION_IS_GREGORIAN}. */
  GregorianCalendarMath of(RateLimitRequest r) {
    String zone = r.metadata().get(GregorianInterval.TIME_ZONE_METADATA);
    if (zone == null) {
      return engineZone;
    }
    GregorianCalendarMath calendar = named.get(zone);
    if (calendar == null) {
      calendar = new GregorianCalendarMath(ZoneId.of(zone));
      remember(zone, calendar);
    }
    return calendar;
  }

  private synchronized void remember(String zone, GregorianCalendarMath calendar) {
    if (named.size() < MAX_CACHED && !named.containsKey(zone)) {
      Map<String, GregorianCalendarMath> more = new HashMap<>(named);
      more.put(zone, calendar);
      named = Map.copyOf(more);
    }
  }
}
