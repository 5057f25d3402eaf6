package dev.weir.core.config;

/**
 * The number syntax Go's parsers (and so Gubernator's and envoyproxy/ratelimit's settings) accept,
 * narrower than Java's: digits are ASCII {@code 0-9} only, where Java also reads {@code \uff15}.
 */
public final class GoSyntax {

  private GoSyntax() {}

  /**
   * Returns whether {@code text} is a whole number as Go's {@code strconv.Atoi} reads it: at most
   * one leading sign, then one or more ASCII digits. Its range is not checked.
   */
  public static boolean isAtoi(String text) {
    int start = text.startsWith("+") || text.startsWith("-") ? 1 : 0;
    if (start == text.length()) {
      return false;
    }
    for (int i = start; i < text.length(); i++) {
      if (!isAsciiDigit(text.charAt(i))) {
        return false;
      }
    }
    return true;
  }

  /** Returns whether {@code c} is an ASCII digit, the only digits Go's numbers hold. */
  public static boolean isAsciiDigit(char c) {
    return c >= '0' && c <= '9';
  }

  /** Returns whether {@code c} is a digit to Java ({@link Character#isDigit}) but not to Go. */
  public static boolean isNonAsciiDigit(char c) {
    return Character.isDigit(c) && !isAsciiDigit(c);
  }
}
