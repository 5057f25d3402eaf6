package dev.weir.envoy.config;

import dev.weir.core.model.GregorianInterval;
import java.time.ZoneId;
import java.util.Map;
import java.util.Objects;

/**
 * The calendar alignment of a rule with {@code calendar: true}: its window is the calendar interval
 * (hour, day, ISO week, month or year) in {@code zone} that contains the request's time, counted by
 * the engine's Gregorian intervals.
 *
 * @param interval the calendar interval of the rule's unit
 * @param zone the zone whose calendar the windows follow ({@code time_zone}, UTC by default)
 * @param requestMetadata the metadata each request of the rule carries: the zone, under {@link
 *     GregorianInterval#TIME_ZONE_METADATA}
 */
public record CalendarWindow(
    GregorianInterval interval, ZoneId zone, Map<String, String> requestMetadata) {

  /** Creates the alignment to {@code interval} in {@code zone}. */
  public CalendarWindow(GregorianInterval interval, ZoneId zone) {
    this(interval, zone, Map.of(GregorianInterval.TIME_ZONE_METADATA, zone.getId()));
  }

  /** Checks the parts and copies the metadata. */
  public CalendarWindow {
    Objects.requireNonNull(interval, "interval");
    Objects.requireNonNull(zone, "zone");
    requestMetadata = Map.copyOf(requestMetadata);
  }
}
