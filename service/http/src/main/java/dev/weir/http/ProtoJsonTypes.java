package dev.weir.http;

import com.google.gson.Strictness;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonToken;
import com.google.gson.stream.JsonWriter;
import com.google.gson.stream.MalformedJsonException;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import java.io.EOFException;
import java.io.IOException;
import java.io.StringReader;
import java.io.Writer;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

/**
 * Finds, in a protojson body, the first value whose JSON type its field does not take, as Go's
 * protojson (behind Gubernator's gateway and envoyproxy/ratelimit's {@code /json}) refuses it with
 * 400 {@code invalid value for string type}. protobuf-java's parser reads some of them anyway, a
 * one-element array or a number where a string belongs ({@code "unique_key":["a"]} as {@code "a"},
 * {@code "unique_key":12345} as {@code "12345"}), and refuses others without naming the field
 * ({@code Array must have size 1, but has size 2}, {@code Not an int64 value: true}).
 *
 * <p>The types are proto3 JSON's: a string or bytes field takes a string; a bool takes {@code true}
 * or {@code false}; an integer field a number or a string, either holding a whole number within the
 * field's range ({@code 5}, {@code "5"}, {@code 5.0}, {@code 5e0}); a float or double a number or a
 * string; an enum a name (a string) or a number; a message an object, and a {@code
 * google.protobuf} wrapper ({@code UInt64Value}, ...) the form of its value; a repeated field an
 * array of such values, a map an object of them. {@code null} stands for a field's default and is
 * allowed for any field, but not as an element of an array or a map's value. A field is set at
 * most once in its object, under either of its names, as Go's protojson requires ({@code duplicate
 * field}): protobuf-java's parser keeps the last of two equal names, so {@code
 * {"requests":[...],"requests":[...]}} would silently lose the first list; a map key likewise
 * appears at most once in its object ({@code duplicate map key}). A string field's
 * value must also be valid UTF-16 text: an escaped surrogate (U+D800 to U+DFFF) only as half of a
 * high-low pair, as Go's protojson requires ({@code invalid escape code}); a lone one, which no
 * UTF-8 encodes, would reach a counter key that protobuf forwards with {@code ?} in its place.
 * Fields the type does not declare, the other well-known types and whatever is inside them, the
 * text of map keys, and what other strings hold (an enum's name, base64) are left to the parser.
 *
 * <p>The body is read once, as a stream, with Gson's strict reader: JSON as RFC 8259 writes it, as
 * Go's protojson reads it, up to the end of the top-level object. protobuf-java's parser reads
 * leniently, so single-quoted or unquoted names and strings ({@code {'requests':[{name:a}]}}),
 * comments and {@code ;} between values would pass it; a syntax error is refused here as {@code
 * malformed JSON: } and where the reader stopped ({@link ParserMessages}). Text after the
 * top-level object is not read, as grpc-gateway's decoder ignores it. The path and the value are
 * written out only for a refusal. Numbers are expected to have passed {@link LongNumbers} first;
 * one that did not is refused here without being read.
 */
public final class ProtoJsonTypes {

  /** The most characters of the offending value a refusal quotes. */
  public static final int MAX_QUOTED = 40;

  /** The well-known types with a JSON form of their own, left to the parser. */
  static final Set<String> SPECIAL =
      Set.of(
          "google.protobuf.Any",
          "google.protobuf.Duration",
          "google.protobuf.Timestamp",
          "google.protobuf.FieldMask",
          "google.protobuf.Struct",
          "google.protobuf.Value",
          "google.protobuf.ListValue");

  /** The wrappers, written as their value. */
  static final Set<String> WRAPPERS =
      Set.of(
          "google.protobuf.DoubleValue",
          "google.protobuf.FloatValue",
          "google.protobuf.Int64Value",
          "google.protobuf.UInt64Value",
          "google.protobuf.Int32Value",
          "google.protobuf.UInt32Value",
          "google.protobuf.BoolValue",
          "google.protobuf.StringValue",
          "google.protobuf.BytesValue");
  private static final BigInteger UINT32_MAX = BigInteger.valueOf(0xFFFF_FFFFL);
  private static final BigInteger UINT64_MAX = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);

  private static final Map<Descriptor, Map<String, FieldDescriptor>> FIELDS =
      new ConcurrentHashMap<>();

  private ProtoJsonTypes() {}

  /**
   * Returns the refusal of the first value in {@code json}, read as a {@code type}, whose JSON type
   * its field does not take: {@code field 'requests[0].unique_key' is ["a"]; it must be a string},
   * the path as the body spells its names, the value cut after {@value #MAX_QUOTED} characters;
   * for a syntax error met before such a value, {@code malformed JSON: Expected name at line 1
   * column 15 path $.requests[0].}; empty when there is neither, or when {@code json} is blank or
   * a well-formed value other than an object (the parser's error tells that).
   */
  public static Optional<String> refusal(String json, Descriptor type) {
    if (json.isBlank()) {
      return Optional.empty();
    }
    JsonReader reader = new JsonReader(new StringReader(json));
    reader.setStrictness(Strictness.STRICT);
    try {
      if (reader.peek() != JsonToken.BEGIN_OBJECT) {
        return Optional.empty();
      }
      return Optional.ofNullable(new Walk(reader).message(type));
    } catch (MalformedJsonException | EOFException malformed) {
      return Optional.of(ParserMessages.malformed(malformed.getMessage()));
    } catch (IOException | RuntimeException unreadable) {
      return Optional.empty();
    }
  }

  /** One walk over a body, with the path to the value being read. */
  private static final class Walk {
    private final JsonReader reader;
    private final List<Object> path = new ArrayList<>();

    Walk(JsonReader reader) {
      this.reader = reader;
    }

    /** Reads an object as {@code type}; returns the refusal of its first wrong value, or null. */
    String message(Descriptor type) throws IOException {
      reader.beginObject();
      Map<String, FieldDescriptor> fields = fields(type);
      Map<FieldDescriptor, String> seen = new HashMap<>();
      while (reader.hasNext()) {
        String name = reader.nextName();
        FieldDescriptor field = fields.get(name);
        if (field == null) {
          skipValue();
          continue;
        }
        path.add(name);
        String first = seen.putIfAbsent(field, name);
        if (first != null) {
          return "field '"
              + path()
              + "' is set twice"
              + (first.equals(name) ? "" : " (first as '" + first + "')")
              + "; it must be set at most once in its object";
        }
        String refusal = field(field);
        if (refusal != null) {
          return refusal;
        }
        path.remove(path.size() - 1);
      }
      reader.endObject();
      return null;
    }

    private String field(FieldDescriptor field) throws IOException {
      JsonToken token = reader.peek();
      if (token == JsonToken.NULL) {
        reader.nextNull();
        return null;
      }
      if (field.isMapField()) {
        FieldDescriptor value = field.getMessageType().findFieldByName("value");
        if (token != JsonToken.BEGIN_OBJECT) {
          return refuse("an object whose values are each " + expected(value));
        }
        reader.beginObject();
        Set<String> keys = new HashSet<>();
        while (reader.hasNext()) {
          String key = reader.nextName();
          path.add(key);
          if (!keys.add(key)) {
            return "field '"
                + path()
                + "' is set twice; a map key must appear at most once in its object";
          }
          String refusal = value(value);
          if (refusal != null) {
            return refusal;
          }
          path.remove(path.size() - 1);
        }
        reader.endObject();
        return null;
      }
      if (field.isRepeated()) {
        if (token != JsonToken.BEGIN_ARRAY) {
          return refuse("an array whose elements are each " + expected(field));
        }
        reader.beginArray();
        for (int i = 0; reader.hasNext(); i++) {
          path.add(i);
          String refusal = value(field);
          if (refusal != null) {
            return refusal;
          }
          path.remove(path.size() - 1);
        }
        reader.endArray();
        return null;
      }
      return value(field);
    }

    /** Reads one value of {@code field}'s type (an element, for a repeated field). */
    private String value(FieldDescriptor field) throws IOException {
      JsonToken token = reader.peek();
      switch (field.getJavaType()) {
        case STRING -> {
          if (token != JsonToken.STRING) {
            return refuse(expected(field));
          }
          return text(reader.nextString());
        }
        case BYTE_STRING -> {
          if (token != JsonToken.STRING) {
            return refuse(expected(field));
          }
          reader.nextString();
          return null;
        }
        case BOOLEAN -> {
          if (token != JsonToken.BOOLEAN) {
            return refuse(expected(field));
          }
          reader.skipValue();
          return null;
        }
        case INT, LONG -> {
          return whole(field, token);
        }
        case FLOAT, DOUBLE -> {
          if (token != JsonToken.NUMBER && token != JsonToken.STRING) {
            return refuse(expected(field));
          }
          reader.skipValue();
          return null;
        }
        case ENUM -> {
          if (token != JsonToken.NUMBER && token != JsonToken.STRING) {
            return refuse(expected(field));
          }
          reader.nextString();
          return null;
        }
        default -> {
          return message(field, token);
        }
      }
    }

    private String message(FieldDescriptor field, JsonToken token) throws IOException {
      Descriptor type = field.getMessageType();
      if (WRAPPERS.contains(type.getFullName())) {
        if (token == JsonToken.NULL) {
          return refuse(expected(field));
        }
        return value(type.findFieldByName("value"));
      }
      if (SPECIAL.contains(type.getFullName())) {
        skipValue();
        return null;
      }
      if (token != JsonToken.BEGIN_OBJECT) {
        return refuse(expected(field));
      }
      return message(type);
    }

    private String whole(FieldDescriptor field, JsonToken token) throws IOException {
      if (token != JsonToken.NUMBER && token != JsonToken.STRING) {
        return refuse(expected(field));
      }
      String text = reader.nextString();
      if (inRange(text, field.getType())) {
        return null;
      }
      String value =
          shown(
              writer -> {
                if (token == JsonToken.STRING) {
                  writer.value(text);
                } else {
                  writer.jsonValue(text);
                }
              });
      return refusal(value, expected(field));
    }

    /**
     * Returns the refusal of {@code text}, a string field's value, when it holds an unpaired
     * surrogate, else null.
     */
    private String text(String text) throws IOException {
      int at = unpairedSurrogate(text);
      if (at < 0) {
        return null;
      }
      return refusal(
          shown(writer -> writer.jsonValue(quoted(text))),
          "valid UTF-16 text, each surrogate escape paired (\\uD800-\\uDBFF directly followed by"
              + " \\uDC00-\\uDFFF): the "
              + escaped(text.charAt(at))
              + " at index "
              + at
              + " is unpaired");
    }

    /** Returns the refusal of the value the reader is at, which is not {@code expected}. */
    private String refuse(String expected) throws IOException {
      return refusal(shown(this::copyValue), expected);
    }

    private String refusal(String value, String expected) {
      return "field '" + path() + "' is " + value + "; it must be " + expected;
    }

    private String path() {
      StringBuilder out = new StringBuilder();
      for (Object segment : path) {
        if (segment instanceof Integer index) {
          out.append('[').append(index).append(']');
        } else {
          out.append(out.length() == 0 ? "" : ".").append(segment);
        }
      }
      return out.toString();
    }

    /**
     * Reads past the value the reader is at, each string with {@code nextString}, which refuses a
     * raw control character where {@code skipValue} does not.
     */
    private void skipValue() throws IOException {
      JsonWriter discard = new JsonWriter(Writer.nullWriter());
      discard.setStrictness(Strictness.LENIENT);
      copyValue(discard);
    }

    /** Copies the value the reader is at to {@code writer}. */
    private void copyValue(JsonWriter writer) throws IOException {
      int depth = 0;
      do {
        switch (reader.peek()) {
          case BEGIN_ARRAY -> {
            reader.beginArray();
            writer.beginArray();
            depth++;
          }
          case END_ARRAY -> {
            reader.endArray();
            writer.endArray();
            depth--;
          }
          case BEGIN_OBJECT -> {
            reader.beginObject();
            writer.beginObject();
            depth++;
          }
          case END_OBJECT -> {
            reader.endObject();
            writer.endObject();
            depth--;
          }
          case NAME -> writer.name(reader.nextName());
          case STRING -> writer.value(reader.nextString());
          case NUMBER -> writer.jsonValue(reader.nextString());
          case BOOLEAN -> writer.value(reader.nextBoolean());
          case NULL -> {
            reader.nextNull();
            writer.nullValue();
          }
          case END_DOCUMENT -> depth = 0;
        }
      } while (depth > 0);
    }
  }

  /** Writes something as JSON. */
  private interface Json {
    void writeTo(JsonWriter writer) throws IOException;
  }

  /**
   * Returns the index of the first surrogate in {@code text} that is not half of a high-low pair,
   * or -1 when there is none. Only a JSON escape of a lone surrogate writes one; no UTF-8 encodes
   * it, and protobuf's writer sends it on as {@code ?}.
   */
  static int unpairedSurrogate(String text) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (!Character.isSurrogate(c)) {
        continue;
      }
      if (Character.isHighSurrogate(c)
          && i + 1 < text.length()
          && Character.isLowSurrogate(text.charAt(i + 1))) {
        i++;
        continue;
      }
      return i;
    }
    return -1;
  }

  /**
   * Returns {@code text} as a JSON string with every surrogate, control character, quote and
   * backslash escaped, so that a refusal quoting it is plain text.
   */
  private static String quoted(String text) {
    StringBuilder out = new StringBuilder(text.length() + 2).append('"');
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20 || Character.isSurrogate(c)) {
        out.append(escaped(c));
      } else {
        out.append(c);
      }
    }
    return out.append('"').toString();
  }

  /** Returns {@code c} as a JSON escape: a backslash, {@code u} and four lower-case hex digits. */
  private static String escaped(char c) {
    return String.format("\\u%04x", (int) c);
  }

  /** Returns what {@code json} writes, cut after {@link #MAX_QUOTED} characters. */
  private static String shown(Json json) throws IOException {
    Bounded out = new Bounded();
    JsonWriter writer = new JsonWriter(out);
    writer.setStrictness(Strictness.LENIENT);
    try {
      json.writeTo(writer);
      writer.flush();
      return out.text.toString();
    } catch (Bounded.Full full) {
      return out.text + "...";
    }
  }

  /** A writer keeping the first {@link #MAX_QUOTED} characters, then stopping the copy. */
  private static final class Bounded extends Writer {
    /** Thrown once the text is full; carries no stack. */
    static final class Full extends IOException {
      private static final long serialVersionUID = 1L;

      Full() {
        super("full", null);
      }

      @Override
      public synchronized Throwable fillInStackTrace() {
        return this;
      }
    }

    final StringBuilder text = new StringBuilder();

    @Override
    public void write(char[] chars, int offset, int length) throws IOException {
      int room = MAX_QUOTED - text.length();
      text.append(chars, offset, Math.min(room, length));
      if (length > room) {
        throw new Full();
      }
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  }

  /** Returns what a value of {@code field} must be, for a refusal. */
  private static String expected(FieldDescriptor field) {
    return switch (field.getType()) {
      case STRING -> "a string";
      case BYTES -> "a string (base64)";
      case BOOL -> "true or false";
      case INT32, SINT32, SFIXED32 ->
          whole("an int32", Integer.MIN_VALUE, Integer.MAX_VALUE);
      case INT64, SINT64, SFIXED64 -> whole("an int64", Long.MIN_VALUE, Long.MAX_VALUE);
      case UINT32, FIXED32 -> whole("a uint32", 0, UINT32_MAX);
      case UINT64, FIXED64 -> whole("a uint64", 0, UINT64_MAX);
      case FLOAT -> "a float: a number, or one written as a string";
      case DOUBLE -> "a double: a number, or one written as a string";
      case ENUM -> enumValue(field.getEnumType());
      case MESSAGE, GROUP -> message(field.getMessageType());
    };
  }

  private static String whole(String type, Object min, Object max) {
    return type + ": a whole number from " + min + " to " + max + ", or one written as a string";
  }

  private static String enumValue(EnumDescriptor type) {
    return "a "
        + type.getFullName()
        + " by name (a string) or number: "
        + type.getValues().stream()
            .map(v -> v.getName() + " (" + v.getNumber() + ")")
            .collect(Collectors.joining(", "));
  }

  private static String message(Descriptor type) {
    if (WRAPPERS.contains(type.getFullName())) {
      return expected(type.findFieldByName("value"));
    }
    return "an object (a " + type.getFullName() + ")";
  }

  /**
   * Returns whether {@code text} is a whole number within the range of {@code type}, as
   * protobuf-java reads it ({@code BigDecimal}'s syntax: {@code 5}, {@code 5.0}, {@code 5e0}).
   */
  static boolean inRange(String text, FieldDescriptor.Type type) {
    long plain = plainLong(text);
    if (plain != NOT_PLAIN) {
      return switch (type) {
        case INT32, SINT32, SFIXED32 -> plain >= Integer.MIN_VALUE && plain <= Integer.MAX_VALUE;
        case UINT32, FIXED32 -> plain >= 0 && plain <= 0xFFFF_FFFFL;
        case UINT64, FIXED64 -> plain >= 0;
        default -> true;
      };
    }
    if (text.length() > LongNumbers.MAX_CHARS) {
      return false;
    }
    BigDecimal number;
    try {
      number = new BigDecimal(text).stripTrailingZeros();
    } catch (NumberFormatException e) {
      return false;
    }
    // a fraction, or more digits than any range holds (checked before the integer is built)
    if (number.scale() > 0 || number.precision() - number.scale() > 20) {
      return false;
    }
    BigInteger whole = number.toBigIntegerExact();
    BigInteger[] range =
        switch (type) {
          case INT32, SINT32, SFIXED32 ->
              new BigInteger[] {
                BigInteger.valueOf(Integer.MIN_VALUE), BigInteger.valueOf(Integer.MAX_VALUE)
              };
          case UINT32, FIXED32 -> new BigInteger[] {BigInteger.ZERO, UINT32_MAX};
          case UINT64, FIXED64 -> new BigInteger[] {BigInteger.ZERO, UINT64_MAX};
          default ->
              new BigInteger[] {BigInteger.valueOf(Long.MIN_VALUE), BigInteger.valueOf(Long.MAX_VALUE)};
        };
    return whole.compareTo(range[0]) >= 0 && whole.compareTo(range[1]) <= 0;
  }

  private static final long NOT_PLAIN = Long.MIN_VALUE;

  /**
   * Returns {@code text} as a long when it is a plain decimal of at most 18 ASCII digits with an
   * optional minus sign, as almost every number sent is; {@link #NOT_PLAIN} otherwise, for {@code
   * BigDecimal} to read.
   */
  private static long plainLong(String text) {
    int start = text.startsWith("-") ? 1 : 0;
    int length = text.length() - start;
    if (length < 1 || length > 18) {
      return NOT_PLAIN;
    }
    long value = 0;
    for (int i = start; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < '0' || c > '9') {
        return NOT_PLAIN;
      }
      value = value * 10 + (c - '0');
    }
    return start == 1 ? -value : value;
  }

  /** Returns {@code type}'s fields by the names a body may give them: JSON and proto names. */
  static Map<String, FieldDescriptor> fields(Descriptor type) {
    return FIELDS.computeIfAbsent(
        type,
        t -> {
          Map<String, FieldDescriptor> byName = new HashMap<>();
          for (FieldDescriptor field : t.getFields()) {
            byName.put(field.getName(), field);
            byName.putIfAbsent(field.getJsonName(), field);
          }
          return Map.copyOf(byName);
        });
  }
}
