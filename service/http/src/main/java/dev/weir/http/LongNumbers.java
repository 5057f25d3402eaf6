package dev.weir.http;

import com.google.gson.Strictness;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonToken;
import java.io.IOException;
import java.io.StringReader;
import java.util.Optional;

/**
 * Finds, in a JSON body, a number too costly to read: protobuf-java's JSON parser reads a number
 * that does not fit its field's type (and a number written as a string) with {@code BigDecimal},
 * whose cost grows with the square of the digits on this JDK (a million digits take about 15 s)
 * and which builds the whole integer of a large exponent ({@code 1e99999999}), so one request
 * could hold a listener thread for minutes.
 *
 * <p>The body is read with Gson's lenient reader, as that parser reads it (comments, single quotes
 * and unquoted words included). A number, or a string made only of the characters a number may hold
 * (digits, Unicode ones included, and {@code + - . e E}), is refused when it is longer than {@link #MAX_CHARS} or its exponent is
 * beyond {@link #MAX_EXPONENT} either way: no field of Weir's requests takes such a value (the
 * longest key allowed is 1024 bytes, and nobody sends a key of a thousand digits).
 */
public final class LongNumbers {

  /** The most characters a number may have. */
  public static final int MAX_CHARS = 1000;

  /** The largest exponent a number may have, either sign. */
  public static final int MAX_EXPONENT = 1000;

  private LongNumbers() {}

  /**
   * Returns the refusal of {@code json} when it holds a number longer than {@link #MAX_CHARS} or
   * with an exponent beyond {@link #MAX_EXPONENT}, naming where it is; empty otherwise. Malformed
   * JSON is left to the parser.
   */
  public static Optional<String> refusal(String json) {
    JsonReader reader = new JsonReader(new StringReader(json));
    reader.setStrictness(Strictness.LENIENT);
    try {
      while (true) {
        JsonToken token = reader.peek();
        switch (token) {
          case BEGIN_ARRAY -> reader.beginArray();
          case END_ARRAY -> reader.endArray();
          case BEGIN_OBJECT -> reader.beginObject();
          case END_OBJECT -> reader.endObject();
          case NAME -> reader.nextName();
          case BOOLEAN -> reader.nextBoolean();
          case NULL -> reader.nextNull();
          case END_DOCUMENT -> {
            return Optional.empty();
          }
          default -> {
            String problem = problem(reader.nextString());
            if (problem != null) {
              return Optional.of("the number at " + reader.getPreviousPath() + " " + problem);
            }
          }
        }
      }
    } catch (IOException | RuntimeException malformed) {
      return Optional.empty();
    }
  }

  /**
   * Returns what is wrong with {@code value} when it is a number too long or with too large an
   * exponent; null otherwise. The path is built only for a refusal: Gson rebuilds it from every
   * enclosing name, which for each value of a large body would be a copy of those names.
   */
  private static String problem(String value) {
    if (value.length() > MAX_CHARS && isNumeric(value)) {
      return "has " + value.length() + " characters; numbers have at most " + MAX_CHARS;
    }
    int e = Math.max(value.indexOf('e'), value.indexOf('E'));
    if (e >= 0 && isNumeric(value) && exponentBeyondLimit(value.substring(e + 1))) {
      return "has the exponent "
          + value.substring(e + 1)
          + "; numbers have exponents up to "
          + MAX_EXPONENT
          + " either way";
    }
    return null;
  }

  private static boolean exponentBeyondLimit(String exponent) {
    String digits = exponent;
    if (digits.startsWith("+") || digits.startsWith("-")) {
      digits = digits.substring(1);
    }
    digits = digits.replaceFirst("^0+", "");
    if (digits.isEmpty() || !digits.chars().allMatch(Character::isDigit)) {
      return false;
    }
    return digits.length() > 4 || Integer.parseInt(digits) > MAX_EXPONENT;
  }

  private static boolean isNumeric(String value) {
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      // any digit: BigDecimal reads every Unicode digit as one
      if (!(Character.isDigit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E')) {
        return false;
      }
    }
    return true;
  }
}
