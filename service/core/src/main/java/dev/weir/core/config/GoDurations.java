package dev.weir.core.config;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.Map;

/**
 * Go's duration syntax ({@code time.ParseDuration}), which Gubernator's settings use: a sequence of
 * decimal numbers, each with an optional fraction and a unit, e.g. {@code 500us}, {@code 1.5s},
 * {@code 1h30m}; units {@code ns}, {@code us}, {@code µs}, {@code μs}, {@code ms}, {@code s},
 * {@code m}, {@code h}; an optional leading sign; {@code 0} alone needs no unit. Digits are ASCII
 * digits only, as in Go.
 */
public final class GoDurations {

  private static final Map<String, Long> NANOS_PER_UNIT =
      Map.of(
          "ns", 1L,
          "us", 1_000L,
          "\u00b5s", 1_000L,
          "\u03bcs", 1_000L,
          "ms", 1_000_000L,
          "s", 1_000_000_000L,
          "m", 60_000_000_000L,
          "h", 3_600_000_000_000L);

  private GoDurations() {}

  /** Parses {@code text}; throws {@link IllegalArgumentException} naming what is wrong. */
  public static Duration parse(String text) {
    String s = text.trim();
    if (s.isEmpty()) {
      throw new IllegalArgumentException("empty duration");
    }
    boolean negative = false;
    int i = 0;
    if (s.charAt(0) == '-' || s.charAt(0) == '+') {
      negative = s.charAt(0) == '-';
      i = 1;
    }
    if (s.substring(i).equals("0")) {
      return Duration.ZERO;
    }
    if (i == s.length()) {
      throw new IllegalArgumentException("missing number");
    }
    BigDecimal totalNanos = BigDecimal.ZERO;
    while (i < s.length()) {
      int numberStart = i;
      while (i < s.length() && (GoSyntax.isAsciiDigit(s.charAt(i)) || s.charAt(i) == '.')) {
        i++;
      }
      String number = s.substring(numberStart, i);
      if (i < s.length() && GoSyntax.isNonAsciiDigit(s.charAt(i))) {
        throw new IllegalArgumentException(
            "'" + s.charAt(i) + "' is not an ASCII digit; digits are ASCII 0-9 only");
      }
      if (number.isEmpty()
          || number.equals(".")
          || number.indexOf('.') != number.lastIndexOf('.')) {
        throw new IllegalArgumentException(
            "expected a number at '" + s.substring(numberStart) + "'");
      }
      int unitStart = i;
      while (i < s.length() && !GoSyntax.isAsciiDigit(s.charAt(i)) && s.charAt(i) != '.') {
        i++;
      }
      String unit = s.substring(unitStart, i);
      Long perUnit = NANOS_PER_UNIT.get(unit);
      if (perUnit == null) {
        throw new IllegalArgumentException(
            unit.isEmpty() ? "missing unit after '" + number + "'" : "unknown unit '" + unit + "'");
      }
      totalNanos = totalNanos.add(new BigDecimal(number).multiply(BigDecimal.valueOf(perUnit)));
    }
    if (totalNanos.compareTo(BigDecimal.valueOf(Long.MAX_VALUE)) > 0) {
      throw new IllegalArgumentException("duration too large");
    }
    long nanos = totalNanos.longValue();
    return Duration.ofNanos(negative ? -nanos : nanos);
  }

  /**
   * Formats {@code duration} in the largest unit that represents it exactly, e.g. {@code 500us}.
   */
  public static String format(Duration duration) {
    long nanos = duration.toNanos();
    if (nanos == 0) {
      return "0s";
    }
    String[] units = {"h", "m", "s", "ms", "us"};
    for (String unit : units) {
      long per = NANOS_PER_UNIT.get(unit);
      if (nanos % per == 0) {
        return nanos / per + unit;
      }
    }
    return nanos + "ns";
  }
}
