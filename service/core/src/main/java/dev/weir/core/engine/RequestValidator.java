package dev.weir.core.engine;

import dev.weir.core.model.Algorithm;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.GregorianInterval;
import dev.weir.core.model.RateLimitRequest;
import java.time.DateTimeException;
import java.time.ZoneId;
import java.util.Optional;

/**
 * The per-item checks of a {@link RateLimitRequest}, in Gubernator's order and with its wording
 * where Gubernator has one. Stateless; a failed check is a per-item error, never an exception.
 *
 * <p>Order: {@code unique_key}, {@code name} (not empty, not starting with {@link
 * #RESERVED_NAME_PREFIX}), algorithm, {@code limit}, {@code duration}, {@code
 * burst}, the Gregorian interval code, then its {@code time_zone} metadata. Gubernator does not
 * check signs; Weir refuses negative {@code limit}, {@code duration} and {@code burst}.
 */
public final class RequestValidator {

  /**
   * The start of the error for a Gregorian request whose {@code duration} is not an interval code:
   * Gubernator's whole message, which the value and the codes allowed follow.
   */
  public static final String INVALID_GREGORIAN =
      "behavior DURATION_IS_GREGORIAN is set; but `Duration` is not a valid gregorian interval";

  private static final String GREGORIAN_CODES =
      "allowed are 0 (minute), 1 (hour), 2 (day), 3 (week), 4 (month), 5 (year)";

  /**
   * The prefix of the names under which a node keeps its own stand-in buckets; no client limit may
   * start with it, or its bucket would be taken for one (left behind by hand-off and snapshots,
   * shared with a stand-in).
   */
  public static final String RESERVED_NAME_PREFIX = "weir:stand-in:";

  private static final Algorithm[] ALGORITHMS = byNumber();
  private static final GregorianInterval[] INTERVALS = byCode();

  private RequestValidator() {}

  /**
   * Returns the first error of {@code request}, or empty when it is valid. The limiter calls this
   * before routing, so an invalid item is answered where it arrived.
   */
  public static Optional<String> validate(RateLimitRequest request) {
    if (request.uniqueKey().isEmpty()) {
      return Optional.of("field 'unique_key' cannot be empty");
    }
    if (request.name().isEmpty()) {
      return Optional.of("field 'namespace' cannot be empty");
    }
    if (request.name().startsWith(RESERVED_NAME_PREFIX)) {
      return Optional.of(
          "field 'name' cannot start with '"
              + RESERVED_NAME_PREFIX
              + "' (reserved for the buckets a node keeps when it stands in for an owner), got '"
              + request.name()
              + "'");
    }
    return validateConfig(request);
  }

  /**
   * Returns the first error in the bucket configuration of {@code request} (algorithm, limit,
   * duration, burst, Gregorian code), ignoring its name and key; empty when it is valid. This is
   * what the engine checks.
   */
  public static Optional<String> validateConfig(RateLimitRequest request) {
    return Optional.ofNullable(configError(request));
  }

  /**
   * Returns the first configuration error of {@code request}, or null; the allocation-free form.
   */
  static String configError(RateLimitRequest request) {
    if (algorithmOf(request.algorithm()) == null) {
      return "Invalid rate limit algorithm '" + request.algorithm() + "'";
    }
    if (request.limit() < 0) {
      return negative("limit", request.limit());
    }
    if (request.duration() < 0) {
      return negative("duration", request.duration());
    }
    if (request.burst() < 0) {
      return negative("burst", request.burst());
    }
    if (request.has(Behavior.DURATION_IS_GREGORIAN)) {
      if (intervalOf(request.duration()) == null) {
        return INVALID_GREGORIAN + ": got " + request.duration() + "; " + GREGORIAN_CODES;
      }
      return timeZoneError(request.metadata().get(GregorianInterval.TIME_ZONE_METADATA));
    }
    return null;
  }

  /**
   * Returns why {@code zone}, the {@code time_zone} metadata of a Gregorian request, names no time
   * zone; null when it does or is absent.
   */
  private static String timeZoneError(String zone) {
    if (zone == null) {
      return null;
    }
    try {
      ZoneId.of(zone);
      return null;
    } catch (DateTimeException e) {
      return "metadata "
          + GregorianInterval.TIME_ZONE_METADATA
          + " '"
          + zone
          + "' is not a time zone: expected a zone id such as Europe/Berlin or UTC, or an"
          + " offset such as +02:00";
    }
  }

  /** Returns the algorithm with wire number {@code number}, or null. */
  static Algorithm algorithmOf(int number) {
    return number >= 0 && number < ALGORITHMS.length ? ALGORITHMS[number] : null;
  }

  /** Returns the Gregorian interval with code {@code code}, or null. */
  static GregorianInterval intervalOf(long code) {
    return code >= 0 && code < INTERVALS.length ? INTERVALS[(int) code] : null;
  }

  private static Algorithm[] byNumber() {
    Algorithm[] all = Algorithm.values();
    Algorithm[] table = new Algorithm[all.length];
    for (Algorithm a : all) {
      table[a.number()] = a;
    }
    return table;
  }

  private static GregorianInterval[] byCode() {
    GregorianInterval[] all = GregorianInterval.values();
    GregorianInterval[] table = new GregorianInterval[all.length];
    for (GregorianInterval g : all) {
      table[g.code()] = g;
    }
    return table;
  }

  private static String negative(String field, long value) {
    return "field '" + field + "' cannot be negative, got " + value;
  }
}
