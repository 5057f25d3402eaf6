package dev.weir.http;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import java.math.BigDecimal;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/**
 * Finds an enum field of a protojson request whose value protobuf-java's parser, ignoring unknown
 * fields, would drop and so read as the enum's first value: a name the enum does not declare, such
 * as {@code "algorithm":"LEAKY"} or {@code "unit":"hour"}, or a number that is not a whole 32-bit
 * one, such as {@code "behavior":4.5} or {@code 4294967300}. Go's protojson (behind Gubernator's
 * gateway and envoyproxy/ratelimit's {@code /json}) refuses both. Enum fields hold one name, or a
 * whole number (also written as a string, as that parser reads it); numbers the enum does not
 * declare are never refused here. A value of another JSON type (a bool, an array) is refused
 * before, by {@link ProtoJsonTypes}.
 */
public final class EnumValues {

  private EnumValues() {}

  /**
   * An enum value the parser would drop: the field's path as the body spells its names, the value
   * and the enum the field holds.
   */
  public record Dropped(String path, JsonPrimitive value, EnumDescriptor type) {

    /** Returns the refusal naming the field, the value and every value of the enum. */
    public String message() {
      return message(v -> true);
    }

    /**
     * Returns the refusal naming the field, the value and the values of the enum that {@code
     * allowed} keeps: {@code field 'requests[0].algorithm' has no value named 'LEAKY';
     * pb.gubernator.Algorithm allows one of TOKEN_BUCKET (0), ..., by name or number}.
     */
    public String message(Predicate<EnumValueDescriptor> allowed) {
      String values =
          type.getValues().stream()
              .filter(allowed)
              .map(v -> v.getName() + " (" + v.getNumber() + ")")
              .collect(Collectors.joining(", "));
      return "field '"
          + path
          + "' "
          + fault(value)
          + "; "
          + type.getFullName()
          + " allows one of "
          + values
          + ", by name or number";
    }
  }

  /**
   * Returns the first enum field of {@code json}, read as {@code type}, whose value the parser
   * would drop; empty when there is none. Fields {@code type} does not declare are skipped, as the
   * parser ignores them.
   */
  public static Optional<Dropped> firstDropped(JsonObject json, Descriptor type) {
    return firstDropped(json, type, v -> true);
  }

  /**
   * Returns the first enum field of {@code json}, read as {@code type}, whose value the parser
   * would drop and {@code which} keeps (such as {@link JsonPrimitive#isNumber}: the first dropped
   * number, after any dropped names); empty when there is none.
   */
  public static Optional<Dropped> firstDropped(
      JsonObject json, Descriptor type, Predicate<JsonPrimitive> which) {
    return inMessage(json, type, "", which);
  }

  private static Optional<Dropped> inMessage(
      JsonObject json, Descriptor type, String path, Predicate<JsonPrimitive> which) {
    for (Map.Entry<String, JsonElement> entry : json.entrySet()) {
      FieldDescriptor field = ProtoJsonTypes.fields(type).get(entry.getKey());
      if (field == null) {
        continue;
      }
      String at = path.isEmpty() ? entry.getKey() : path + "." + entry.getKey();
      Optional<Dropped> dropped = inField(entry.getValue(), field, at, which);
      if (dropped.isPresent()) {
        return dropped;
      }
    }
    return Optional.empty();
  }

  private static Optional<Dropped> inField(
      JsonElement value, FieldDescriptor field, String path, Predicate<JsonPrimitive> which) {
    if (field.isMapField() && value.isJsonObject()) {
      FieldDescriptor mapValue = field.getMessageType().findFieldByName("value");
      for (Map.Entry<String, JsonElement> entry : value.getAsJsonObject().entrySet()) {
        Optional<Dropped> dropped =
            inValue(entry.getValue(), mapValue, path + "." + entry.getKey(), which);
        if (dropped.isPresent()) {
          return dropped;
        }
      }
      return Optional.empty();
    }
    if (field.isRepeated() && value.isJsonArray()) {
      for (int i = 0; i < value.getAsJsonArray().size(); i++) {
        Optional<Dropped> dropped =
            inValue(value.getAsJsonArray().get(i), field, path + "[" + i + "]", which);
        if (dropped.isPresent()) {
          return dropped;
        }
      }
      return Optional.empty();
    }
    return inValue(value, field, path, which);
  }

  private static Optional<Dropped> inValue(
      JsonElement value, FieldDescriptor field, String path, Predicate<JsonPrimitive> which) {
    if (field.getJavaType() == FieldDescriptor.JavaType.MESSAGE && value.isJsonObject()) {
      return inMessage(value.getAsJsonObject(), field.getMessageType(), path, which);
    }
    if (field.getJavaType() != FieldDescriptor.JavaType.ENUM || !value.isJsonPrimitive()) {
      return Optional.empty();
    }
    String text = value.getAsString();
    EnumDescriptor type = field.getEnumType();
    if (type.findValueByName(text) != null
        || isInt32(text)
        || !which.test(value.getAsJsonPrimitive())) {
      return Optional.empty();
    }
    return Optional.of(new Dropped(path, value.getAsJsonPrimitive(), type));
  }

  /** Returns what is wrong with {@code value}, a name or number no enum value has. */
  private static String fault(JsonPrimitive value) {
    String text = value.getAsString();
    if (!value.isNumber()) {
      return "has no value named '" + text + "'";
    }
    return "has no value "
        + text
        + (isWhole(text)
            ? ", which is outside the 32-bit range of enum numbers"
            : ", which is not a whole number");
  }

  /**
   * Returns whether protobuf-java's parser reads {@code text} as an enum number: a decimal whose
   * value is a whole 32-bit number, such as {@code 34}, {@code 34.0} or {@code 3.4e1}.
   */
  private static boolean isInt32(String text) {
    try {
      new BigDecimal(text).intValueExact();
      return true;
    } catch (NumberFormatException | ArithmeticException e) {
      return false;
    }
  }

  private static boolean isWhole(String number) {
    try {
      return new BigDecimal(number).stripTrailingZeros().scale() <= 0;
    } catch (NumberFormatException e) {
      return false;
    }
  }
}
