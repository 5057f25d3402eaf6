package dev.weir.http;

import com.google.gson.Strictness;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonToken;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import java.io.IOException;
import java.io.StringReader;
import java.util.Map;
import java.util.Optional;

/**
 * Finds, in a protojson body, a number too costly to read: protobuf-java's JSON parser reads a
 * value of a numeric field (an integer, float, double or enum) that does not fit its field's type,
 * and one written as a string, with {@code BigDecimal}, whose cost grows with the square of the
 * digits on this JDK (a million digits take about 15 s) and which builds the whole integer of a
 * large exponent ({@code 1e99999999}), so one request could hold a listener thread for minutes.
 *
 * <p>The body is read with Gson's lenient reader, as that parser reads it (comments, single quotes
 * and unquoted words included), against the message type it is parsed as. A number, or a string
 * made only of the characters a number may hold (digits, Unicode ones included, and {@code + - . e
 * E}), is refused when it is longer than {@link #MAX_CHARS} or its exponent is beyond {@link
 * #MAX_EXPONENT} either way, where the parser would read it as a number: as the value of a numeric
 * field or wrapper, or the key of a map with numeric keys. No such field of Weir's requests takes
 * such a value. The values of string, bytes and bool fields ({@code "unique_key":"E1234"}) and of
 * fields the type does not declare are not read as numbers, and are not checked; a message,
 * repeated or map field given another JSON shape, and whatever is inside a well-known type with a
 * JSON form of its own ({@code Struct}, {@code Any}, ...), is checked throughout.
 */
public final class LongNumbers {

  /** The most characters a number may have. */
  public static final int MAX_CHARS = 1000;

  /** The largest exponent a number may have, either sign. */
  public static final int MAX_EXPONENT = 1000;

  private LongNumbers() {}

  /**
   * Returns the refusal of {@code json}, read as a {@code type}, when it holds a number longer than
   * {@link #MAX_CHARS} or with an exponent beyond {@link #MAX_EXPONENT} where protobuf-java reads a
   * number, naming where it is; empty otherwise. Malformed JSON is left to the parser.
   */
  public static Optional<String> refusal(String json, Descriptor type) {
    JsonReader reader = new JsonReader(new StringReader(json));
    reader.setStrictness(Strictness.LENIENT);
    try {
      String refusal =
          reader.peek() == JsonToken.BEGIN_OBJECT ? message(reader, type) : anyValue(reader);
      return Optional.ofNullable(refusal);
    } catch (IOException | RuntimeException malformed) {
      return Optional.empty();
    }
  }

  /** Reads an object as {@code type}; returns the refusal of its first costly number, or null. */
  private static String message(JsonReader reader, Descriptor type) throws IOException {
    Map<String, FieldDescriptor> fields = ProtoJsonTypes.fields(type);
    reader.beginObject();
    while (reader.hasNext()) {
      FieldDescriptor field = fields.get(reader.nextName());
      String refusal = field == null ? skip(reader) : field(reader, field);
      if (refusal != null) {
        return refusal;
      }
    }
    reader.endObject();
    return null;
  }

  private static String field(JsonReader reader, FieldDescriptor field) throws IOException {
    JsonToken token = reader.peek();
    if (field.isMapField() && token == JsonToken.BEGIN_OBJECT) {
      boolean numericKeys = numeric(field.getMessageType().findFieldByName("key"));
      FieldDescriptor value = field.getMessageType().findFieldByName("value");
      reader.beginObject();
      while (reader.hasNext()) {
        String key = reader.nextName();
        String problem = numericKeys ? problem(key) : null;
        if (problem != null) {
          return refusal(reader.getPath(), problem);
        }
        String refusal = value(reader, value);
        if (refusal != null) {
          return refusal;
        }
      }
      reader.endObject();
      return null;
    }
    if (field.isRepeated() && !field.isMapField() && token == JsonToken.BEGIN_ARRAY) {
      reader.beginArray();
      while (reader.hasNext()) {
        String refusal = value(reader, field);
        if (refusal != null) {
          return refusal;
        }
      }
      reader.endArray();
      return null;
    }
    return field.isRepeated() ? anyValue(reader) : value(reader, field);
  }

  /** Reads one value of {@code field}'s type (an element, for a repeated field). */
  private static String value(JsonReader reader, FieldDescriptor field) throws IOException {
    if (numeric(field)) {
      return anyValue(reader);
    }
    if (field.getJavaType() != FieldDescriptor.JavaType.MESSAGE) {
      return skip(reader);
    }
    Descriptor type = field.getMessageType();
    if (ProtoJsonTypes.WRAPPERS.contains(type.getFullName())) {
      return value(reader, type.findFieldByName("value"));
    }
    if (reader.peek() == JsonToken.BEGIN_OBJECT
        && !ProtoJsonTypes.SPECIAL.contains(type.getFullName())) {
      return message(reader, type);
    }
    return anyValue(reader);
  }

  private static boolean numeric(FieldDescriptor field) {
    return switch (field.getJavaType()) {
      case INT, LONG, FLOAT, DOUBLE, ENUM -> true;
      default -> false;
    };
  }

  private static String skip(JsonReader reader) throws IOException {
    reader.skipValue();
    return null;
  }

  /** Reads one value of any shape; returns the refusal of its first costly number, or null. */
  private static String anyValue(JsonReader reader) throws IOException {
    int depth = 0;
    do {
      switch (reader.peek()) {
        case BEGIN_ARRAY -> {
          reader.beginArray();
          depth++;
        }
        case END_ARRAY -> {
          reader.endArray();
          depth--;
        }
        case BEGIN_OBJECT -> {
          reader.beginObject();
          depth++;
        }
        case END_OBJECT -> {
          reader.endObject();
          depth--;
        }
        case NAME -> reader.nextName();
        case BOOLEAN -> reader.nextBoolean();
        case NULL -> reader.nextNull();
        case END_DOCUMENT -> depth = 0;
        case STRING, NUMBER -> {
          String problem = problem(reader.nextString());
          if (problem != null) {
            return refusal(reader.getPreviousPath(), problem);
          }
        }
      }
    } while (depth > 0);
    return null;
  }

  private static String refusal(String path, String problem) {
    return "the number at " + path + " " + problem;
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
