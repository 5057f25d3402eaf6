package dev.weir.envoy.config;

import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit;
import io.envoyproxy.envoy.type.v3.RateLimitUnit;
import java.util.Locale;
import java.util.Optional;

/**
 * The time units of envoyproxy/ratelimit: parsing from YAML and their window lengths.
 *
 * <p>Window lengths are envoyproxy/ratelimit's fixed dividers: a MONTH is 30 days and a YEAR 365
 * days, not calendar months and years, so a YAML file gives the same decisions here as there.
 */
public final class Units {

  /** The unit names a YAML file may use, in any case, shortest first. */
  public static final String NAMES = "second, minute, hour, day, week, month, year";

  private Units() {}

  /**
   * Returns the unit whose name, upper-cased, is {@code text}, or empty when {@code text} names no
   * unit or names {@code UNKNOWN}.
   */
  public static Optional<Unit> parse(String text) {
    String upper = text.toUpperCase(Locale.ROOT);
    for (Unit unit : Unit.values()) {
      if (unit != Unit.UNKNOWN && unit != Unit.UNRECOGNIZED && unit.name().equals(upper)) {
        return Optional.of(unit);
      }
    }
    return Optional.empty();
  }

  /** Returns the window length of {@code unit} in milliseconds, or 0 for {@code UNKNOWN}. */
  public static long millis(Unit unit) {
    return switch (unit) {
      case SECOND -> 1_000L;
      case MINUTE -> 60_000L;
      case HOUR -> 3_600_000L;
      case DAY -> 86_400_000L;
      case WEEK -> 604_800_000L;
      case MONTH -> 2_592_000_000L;
      case YEAR -> 31_536_000_000L;
      default -> 0L;
    };
  }

  /**
   * Returns the response unit for a limit override's unit, which uses Envoy's {@code type.v3}
   * numbering (no WEEK); empty for {@code UNKNOWN} or an unrecognized number.
   */
  public static Optional<Unit> fromOverride(RateLimitUnit unit) {
    return switch (unit) {
      case SECOND -> Optional.of(Unit.SECOND);
      case MINUTE -> Optional.of(Unit.MINUTE);
      case HOUR -> Optional.of(Unit.HOUR);
      case DAY -> Optional.of(Unit.DAY);
      case MONTH -> Optional.of(Unit.MONTH);
      case YEAR -> Optional.of(Unit.YEAR);
      default -> Optional.empty();
    };
  }
}
