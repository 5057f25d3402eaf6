package dev.weir.core.json;

import java.util.Optional;

/**
 * Finds, in a JSON text, a number too long to be read in bounded time: protobuf-java's JSON parser
 * reads a number that does not fit its field's type (and a number written as a string) with {@code
 * BigDecimal}, whose cost grows with the square of the digits on this JDK (a million digits take
 * about 15 s), so one request of a few megabytes could hold a listener thread for minutes.
 *
 * <p>A token is a bare literal, or the contents of a string (its backslash-u escapes read as the
 * characters they stand for), made only of the characters a JSON or protojson number may hold
 * ({@code 0-9 + - . e E}); one longer than {@link #MAX_CHARS} is refused whether it was meant as a
 * number or not: no field of Weir's requests takes such a value (the longest key allowed is 1024
 * bytes, and a key of a thousand digits is not one anybody sends). One pass over the characters;
 * nothing is allocated.
 */
public final class LongNumbers {

  /** The most characters a number token may have. */
  public static final int MAX_CHARS = 1000;

  private LongNumbers() {}

  /**
   * Returns the refusal of {@code json} when it holds a number token longer than {@link #MAX_CHARS}:
   * where it starts and how long it is; empty otherwise. Malformed JSON is left to the parser.
   */
  public static Optional<String> refusal(String json) {
    boolean inString = false;
    int start = -1;
    boolean numeric = true;
    for (int i = 0; i < json.length(); i++) {
      char c = json.charAt(i);
      if (inString) {
        if (c == '"') {
          Optional<String> tooLong = check(numeric, start, i);
          if (tooLong.isPresent()) {
            return tooLong;
          }
          inString = false;
          start = -1;
        } else if (c == '\\') {
          char escaped = unicodeEscape(json, i);
          numeric &= isNumberChar(escaped);
          i += escaped == 0 ? 1 : 5;
        } else if (numeric && !isNumberChar(c)) {
          numeric = false;
        }
        continue;
      }
      if (c == '"') {
        Optional<String> tooLong = check(true, start, i);
        if (tooLong.isPresent()) {
          return tooLong;
        }
        inString = true;
        start = i + 1;
        numeric = true;
      } else if (isNumberChar(c)) {
        if (start < 0) {
          start = i;
        }
      } else {
        Optional<String> tooLong = check(true, start, i);
        if (tooLong.isPresent()) {
          return tooLong;
        }
        start = -1;
      }
    }
    return inString ? Optional.empty() : check(true, start, json.length());
  }

  private static Optional<String> check(boolean numeric, int start, int end) {
    if (!numeric || start < 0 || end - start <= MAX_CHARS) {
      return Optional.empty();
    }
    return Optional.of(
        "the number at character "
            + start
            + " has "
            + (end - start)
            + " characters; numbers have at most "
            + MAX_CHARS);
  }

  /** Returns the character of the backslash-u escape at {@code at}, or 0 for any other escape. */
  private static char unicodeEscape(String json, int at) {
    if (at + 5 >= json.length() || json.charAt(at + 1) != 'u') {
      return 0;
    }
    try {
      return (char) Integer.parseInt(json, at + 2, at + 6, 16);
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  private static boolean isNumberChar(char c) {
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
  }
}
