package dev.weir.gubernator.http;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import java.math.BigDecimal;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Finds an enum field of a protojson request whose value is a name the enum does not declare, such
 * as {@code "algorithm":"LEAKY"} or {@code "behavior":"GLOBAL|DRAIN_OVER_LIMIT"}, which a parser
 * ignoring unknown fields would silently read as the enum's first value. Enum fields hold one name,
 * or a number (also written as a string); numbers are never refused here.
 */
final class EnumNames {

  private static final String BEHAVIOR = "pb.gubernator.Behavior";

  private EnumNames() {}

  /**
   * Returns the error for the first enum field of {@code json}, read as {@code type}, that names an
   * undeclared value: its path, the value and the names allowed; empty when there is none. Fields
   * {@code type} does not declare are skipped, as the gateway ignores them.
   */
  static Optional<String> firstUnknown(Struct json, Descriptor type) {
    return inMessage(json, type, "");
  }

  private static Optional<String> inMessage(Struct json, Descriptor type, String path) {
    for (Map.Entry<String, Value> entry : json.getFieldsMap().entrySet()) {
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

  private static Optional<String> inField(Value value, FieldDescriptor field, String path) {
    if (field.isMapField() && value.hasStructValue()) {
      FieldDescriptor mapValue = field.getMessageType().findFieldByName("value");
      for (Map.Entry<String, Value> entry : value.getStructValue().getFieldsMap().entrySet()) {
        Optional<String> error = inValue(entry.getValue(), mapValue, path + "." + entry.getKey());
        if (error.isPresent()) {
          return error;
        }
      }
      return Optional.empty();
    }
    if (field.isRepeated() && value.hasListValue()) {
      for (int i = 0; i < value.getListValue().getValuesCount(); i++) {
        Optional<String> error =
            inValue(value.getListValue().getValues(i), field, path + "[" + i + "]");
        if (error.isPresent()) {
          return error;
        }
      }
      return Optional.empty();
    }
    return inValue(value, field, path);
  }

  private static Optional<String> inValue(Value value, FieldDescriptor field, String path) {
    if (field.getJavaType() == FieldDescriptor.JavaType.MESSAGE && value.hasStructValue()) {
      return inMessage(value.getStructValue(), field.getMessageType(), path);
    }
    if (field.getJavaType() != FieldDescriptor.JavaType.ENUM || !value.hasStringValue()) {
      return Optional.empty();
    }
    String name = value.getStringValue();
    EnumDescriptor type = field.getEnumType();
    if (type.findValueByName(name) != null || isWholeNumber(name)) {
      return Optional.empty();
    }
    return Optional.of(error(path, name, type));
  }

  private static String error(String path, String name, EnumDescriptor type) {
    String allowed =
        type.getValues().stream()
            .map(v -> v.getName() + " (" + v.getNumber() + ")")
            .collect(Collectors.joining(", "));
    String message =
        "field '"
            + path
            + "' has no value named '"
            + name
            + "'; "
            + type.getFullName()
            + " allows one of "
            + allowed
            + ", by name or number";
    if (type.getFullName().equals(BEHAVIOR)) {
      message += "; to combine flags, send the sum of their numbers, e.g. " + example(type);
    }
    return message;
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

  private static boolean isWholeNumber(String text) {
    try {
      new BigDecimal(text.trim()).intValueExact();
      return true;
    } catch (NumberFormatException | ArithmeticException e) {
      return false;
    }
  }
}
