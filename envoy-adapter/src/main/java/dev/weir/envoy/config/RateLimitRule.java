package dev.weir.envoy.config;

import dev.weir.core.model.Algorithm;
import dev.weir.core.model.Behavior;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The {@code rate_limit} block of one descriptor rule (or one entry of its {@code rate_limits}), with
 * Weir's extensions.
 *
 * @param requestsPerUnit the limit per window, a uint32 (0 blocks every request)
 * @param unit the window unit; {@code UNKNOWN} when {@code unlimited}
 * @param unlimited whether the rule never limits
 * @param name the rule's name, echoed in {@code current_limit.name} and the target of {@code
 *     replaces}
 * @param replaces names of other matched rules this rule drops
 * @param algorithm the counting algorithm (Weir extension)
 * @param burst the leaky bucket capacity; 0 means {@code requestsPerUnit} (Weir extension)
 * @param behavior OR-ed {@link dev.weir.core.model.Behavior} flags (Weir extension)
 * @param unitMultiplier how many units one window lasts, at least 1 (Weir extension)
 * @param calendar the calendar alignment of the window, with {@code calendar: true} (Weir
 *     extension); empty for windows of fixed length aligned to the Unix epoch
 */
public record RateLimitRule(
    long requestsPerUnit,
    Unit unit,
    boolean unlimited,
    String name,
    List<String> replaces,
    Algorithm algorithm,
    long burst,
    int behavior,
    long unitMultiplier,
    Optional<CalendarWindow> calendar) {

  /** Creates a rule, copying {@code replaces}. */
  public RateLimitRule {
    Objects.requireNonNull(unit, "unit");
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(algorithm, "algorithm");
    Objects.requireNonNull(calendar, "calendar");
    replaces = List.copyOf(replaces);
    if (unitMultiplier < 1) {
      throw new IllegalArgumentException("unitMultiplier must be at least 1, got " + unitMultiplier);
    }
  }

  /** Creates a rule whose windows have a fixed length, aligned to the Unix epoch. */
  public RateLimitRule(
      long requestsPerUnit,
      Unit unit,
      boolean unlimited,
      String name,
      List<String> replaces,
      Algorithm algorithm,
      long burst,
      int behavior,
      long unitMultiplier) {
    this(
        requestsPerUnit,
        unit,
        unlimited,
        name,
        replaces,
        algorithm,
        burst,
        behavior,
        unitMultiplier,
        Optional.empty());
  }

  /** Creates a rule whose window is one {@code unit}. */
  public RateLimitRule(
      long requestsPerUnit,
      Unit unit,
      boolean unlimited,
      String name,
      List<String> replaces,
      Algorithm algorithm,
      long burst,
      int behavior) {
    this(requestsPerUnit, unit, unlimited, name, replaces, algorithm, burst, behavior, 1);
  }

  /**
   * Returns the nominal window length in milliseconds: the unit's times {@code unitMultiplier} (for
   * a calendar window, its unit's fixed length, e.g. 30 days for a month).
   */
  public long windowMillis() {
    return Units.millis(unit) * unitMultiplier;
  }

  /**
   * Returns the {@code duration} of the rule's requests: the Gregorian interval code of a calendar
   * window, else {@link #windowMillis()}.
   */
  public long requestDuration() {
    return calendar.isPresent() ? calendar.get().interval().code() : windowMillis();
  }

  /**
   * Returns the {@code behavior} of the rule's requests: {@code behavior}, with {@link
   * Behavior#DURATION_IS_GREGORIAN} for a calendar window.
   */
  public int requestBehavior() {
    return calendar.isPresent() ? behavior | Behavior.DURATION_IS_GREGORIAN : behavior;
  }

  /** Returns the metadata of the rule's requests: the calendar's zone, else none. */
  public Map<String, String> requestMetadata() {
    return calendar.isPresent() ? calendar.get().requestMetadata() : Map.of();
  }
}
