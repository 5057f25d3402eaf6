package dev.weir.gubernator.http;

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
import java.util.stream.Collectors;

/**
 * Finds an enum field of a protojson request whose value protobuf-java's parser, ignoring unknown
 * fields, would drop and so read as the enum's first value: a name the enum does not declare, such
 * as {@code "algorithm":"LEAKY"} or {@code "behavior":"GLOBAL|DRAIN_OVER_LIMIT"}, or a number that
 * is not a whole 32-bit one, such as {@code "behavior":4.5} or {@code 4294967300}. Enum fields hold
 * one name, or a whole number (also written as a string, as that parser reads it); numbers the
 * enum does not declare are never refused here. A value of another JSON type (a bool, an array) is
 * refused before, by {@link dev.weir.http.ProtoJsonTypes}.
 */
final class EnumValues {

  private static final String BEHAVIOR = "pb.gubernator.Behavior";

  private EnumValues() {}

  /**
   * Returns the error for the first enum field of {@code json}, read as {@code type}, whose value
   * the parser would drop: its path, the value and the values allowed; empty when there is none.
   * Fields {@code type} does not declare are skipped, as the gateway ignores them.
   */
  static Optional<String> firstDropped(JsonObject json, Descriptor type) {
    return inMessage(json, type, "");
  }

  private static Optional<String> inMessage(JsonObject json, Descriptor type, String path) {
    for (Map.Entry<String, JsonElement> entry : json.entrySet()) {
      FieldDescriptor field = field(type, entry.getKey());
      if (field == null) {
        continue;
      }
      String at = path.isEmpty() ? entry.getKey() : path + "." + entry.getKey();
      Optional<String> error = inField(entry.getValue(), field, at);
      if (error.isPresent()) {
        return error;
      }
    }
    return Optional.empty();
  }

  private static Optional<String> inField(JsonElement value, FieldDescriptor field, String path) {
    if (field.isMapField() && value.isJsonObject()) {
      FieldDescriptor mapValue = field.getMessageType().findFieldByName("value");
      for (Map.Entry<String, JsonElement> entry : value.getAsJsonObject().entrySet()) {
        Optional<String> error = inValue(entry.getValue(), mapValue, path + "." + entry.getKey());
        if (error.isPresent()) {
          return error;
        }
      }
      return Optional.empty();
    }
    if (field.isRepeated() && value.isJsonArray()) {
      for (int i = 0; i < value.getAsJsonArray().size(); i++) {
        Optional<String> error =
            inValue(value.getAsJsonArray().get(i), field, path + "[" + i + "]");
        if (error.isPresent()) {
          return error;
        }
      }
      return Optional.empty();
    }
    return inValue(value, field, path);
  }

  private static Optional<String> inValue(JsonElement value, FieldDescriptor field, String path) {
    if (field.getJavaType() == FieldDescriptor.JavaType.MESSAGE && value.isJsonObject()) {
      return inMessage(value.getAsJsonObject(), field.getMessageType(), path);
    }
    if (field.getJavaType() != FieldDescriptor.JavaType.ENUM) {
      return Optional.empty();
    }
    if (!value.isJsonPrimitive()) {
      return Optional.empty();
    }
    String text = value.getAsString();
    EnumDescriptor type = field.getEnumType();
    if (type.findValueByName(text) != null || isInt32(text)) {
      return Optional.empty();
    }
    return Optional.of(error(path, value.getAsJsonPrimitive(), type));
  }

  private static String error(String path, JsonPrimitive value, EnumDescriptor type) {
    String allowed =
        type.getValues().stream()
            .map(v -> v.getName() + " (" + v.getNumber() + ")")
            .collect(Collectors.joining(", "));
    String message =
        "field '"
            + path
            + "' "
            + fault(value)
            + "; "
            + type.getFullName()
            + " allows one of "
            + allowed
            + ", by name or number";
    if (type.getFullName().equals(BEHAVIOR)) {
      message += "; to combine flags, send the sum of their numbers, e.g. " + example(type);
    }
    return message;
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

  private static String example(EnumDescriptor behavior) {
    EnumValueDescriptor global = behavior.findValueByName("GLOBAL");
    EnumValueDescriptor drain = behavior.findValueByName("DRAIN_OVER_LIMIT");
    return "\"behavior\":"
        + (global.getNumber() + drain.getNumber())
        + " for GLOBAL and DRAIN_OVER_LIMIT";
  }

  private static FieldDescriptor field(Descriptor type, String jsonName) {
    for (FieldDescriptor field : type.getFields()) {
      if (field.getJsonName().equals(jsonName) || field.getName().equals(jsonName)) {
        return field;
      }
    }
    return null;
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
