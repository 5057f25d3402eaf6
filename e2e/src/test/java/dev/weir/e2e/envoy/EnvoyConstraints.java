package dev.weir.e2e.envoy;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.OneofDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import io.envoyproxy.pgv.validate.Validate;
import io.envoyproxy.pgv.validate.Validate.FieldRules;
import java.util.ArrayList;
import java.util.List;

/**
 * Checks the constraints Envoy's API declares with protoc-gen-validate annotations ({@code
 * validate.rules}, {@code validate.required}) and Envoy enforces when it loads a configuration:
 * required messages and oneofs, string lengths and prefixes, list sizes, defined enum values and
 * numeric bounds. Typed configs ({@code Any}) are checked as the type they carry. Rules not listed
 * here (patterns, well-known string formats, durations, maps) are not checked.
 */
public final class EnvoyConstraints {
  private EnvoyConstraints() {}

  /**
   * Returns every violated constraint in {@code message}, each naming the field path and the rule.
   */
  public static List<String> violations(Message message) {
    List<String> violations = new ArrayList<>();
    check(message, message.getDescriptorForType().getName(), violations);
    return violations;
  }

  private static void check(Message message, String path, List<String> violations) {
    Descriptor type = message.getDescriptorForType();
    if (type.getFullName().equals(Any.getDescriptor().getFullName())) {
      checkAny(
          (String) message.getField(type.findFieldByName("type_url")),
          (ByteString) message.getField(type.findFieldByName("value")),
          path,
          violations);
      return;
    }
    for (OneofDescriptor oneof : type.getRealOneofs()) {
      if (oneof.getOptions().getExtension(Validate.required) && !message.hasOneof(oneof)) {
        violations.add(path + ": one of " + oneof.getName() + " is required");
      }
    }
    for (FieldDescriptor field : type.getFields()) {
      String at = path + "." + field.getName();
      FieldRules rules = field.getOptions().getExtension(Validate.rules);
      boolean inOneof = field.getRealContainingOneof() != null;
      if (field.isRepeated()) {
        int count = message.getRepeatedFieldCount(field);
        if (rules.hasRepeated()) {
          Validate.RepeatedRules repeated = rules.getRepeated();
          if (repeated.hasMinItems() && count < repeated.getMinItems()) {
            violations.add(
                at + ": at least " + repeated.getMinItems() + " item(s) required, found " + count);
          }
          if (repeated.hasMaxItems() && count > repeated.getMaxItems()) {
            violations.add(
                at + ": at most " + repeated.getMaxItems() + " item(s) allowed, found " + count);
          }
        }
        if (field.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
          for (int i = 0; i < count; i++) {
            check((Message) message.getRepeatedField(field, i), at + "[" + i + "]", violations);
          }
        }
        continue;
      }
      if (inOneof && !message.hasField(field)) {
        continue;
      }
      Object value = message.getField(field);
      switch (field.getJavaType()) {
        case MESSAGE -> {
          if (rules.hasMessage() && rules.getMessage().getRequired() && !message.hasField(field)) {
            violations.add(at + ": is required");
          }
          if (message.hasField(field)) {
            checkWrapper(rules, (Message) value, at, violations);
            check((Message) value, at, violations);
          }
        }
        case STRING -> checkString(rules, (String) value, at, violations);
        case ENUM -> {
          if (rules.hasEnum()
              && rules.getEnum().getDefinedOnly()
              && ((EnumValueDescriptor) value).getIndex() < 0) {
            violations.add(at + ": " + value + " is not a defined value");
          }
        }
        case INT, LONG -> checkNumber(rules, ((Number) value).longValue(), at, violations);
        default -> {}
      }
    }
  }

  private static void checkAny(
      String typeUrl, ByteString bytes, String path, List<String> violations) {
    Descriptor type;
    try {
      type = EnvoyYaml.descriptorOf(typeUrl);
    } catch (IllegalArgumentException e) {
      violations.add(path + ": " + e.getMessage());
      return;
    }
    try {
      check(DynamicMessage.parseFrom(type, bytes), path + "<" + type.getName() + ">", violations);
    } catch (InvalidProtocolBufferException e) {
      violations.add(path + ": typed_config does not decode as " + type.getFullName());
    }
  }

  private static void checkString(
      FieldRules rules, String value, String at, List<String> violations) {
    if (!rules.hasString()) {
      return;
    }
    Validate.StringRules string = rules.getString();
    if (string.getIgnoreEmpty() && value.isEmpty()) {
      return;
    }
    if (string.hasMinLen() && value.length() < string.getMinLen()) {
      violations.add(
          at
              + ": at least "
              + string.getMinLen()
              + " character(s) required, found '"
              + value
              + "'");
    }
    if (string.hasMaxLen() && value.length() > string.getMaxLen()) {
      violations.add(at + ": at most " + string.getMaxLen() + " character(s) allowed");
    }
    if (string.hasPrefix() && !value.startsWith(string.getPrefix())) {
      violations.add(at + ": must start with '" + string.getPrefix() + "', found '" + value + "'");
    }
    if (string.hasSuffix() && !value.endsWith(string.getSuffix())) {
      violations.add(at + ": must end with '" + string.getSuffix() + "', found '" + value + "'");
    }
    if (string.getInCount() > 0 && !string.getInList().contains(value)) {
      violations.add(at + ": '" + value + "' is not one of " + string.getInList());
    }
  }

  /**
   * Numeric rules on a wrapper field (UInt32Value, UInt64Value, ...) apply to its {@code value}.
   */
  private static void checkWrapper(
      FieldRules rules, Message wrapper, String at, List<String> violations) {
    FieldDescriptor value = wrapper.getDescriptorForType().findFieldByName("value");
    if (value != null
        && wrapper.getDescriptorForType().getFile().getPackage().equals("google.protobuf")
        && wrapper.getField(value) instanceof Number number) {
      checkNumber(rules, number.longValue(), at, violations);
    }
  }

  private static void checkNumber(
      FieldRules rules, long value, String at, List<String> violations) {
    Long lte = null;
    Long lt = null;
    Long gte = null;
    Long gt = null;
    if (rules.hasUint32()) {
      var r = rules.getUint32();
      lte = r.hasLte() ? Integer.toUnsignedLong(r.getLte()) : null;
      lt = r.hasLt() ? Integer.toUnsignedLong(r.getLt()) : null;
      gte = r.hasGte() ? Integer.toUnsignedLong(r.getGte()) : null;
      gt = r.hasGt() ? Integer.toUnsignedLong(r.getGt()) : null;
      value = Integer.toUnsignedLong((int) value);
    } else if (rules.hasUint64()) {
      var r = rules.getUint64();
      lte = r.hasLte() ? r.getLte() : null;
      lt = r.hasLt() ? r.getLt() : null;
      gte = r.hasGte() ? r.getGte() : null;
      gt = r.hasGt() ? r.getGt() : null;
    } else if (rules.hasInt32()) {
      var r = rules.getInt32();
      lte = r.hasLte() ? (long) r.getLte() : null;
      lt = r.hasLt() ? (long) r.getLt() : null;
      gte = r.hasGte() ? (long) r.getGte() : null;
      gt = r.hasGt() ? (long) r.getGt() : null;
    } else if (rules.hasInt64()) {
      var r = rules.getInt64();
      lte = r.hasLte() ? r.getLte() : null;
      lt = r.hasLt() ? r.getLt() : null;
      gte = r.hasGte() ? r.getGte() : null;
      gt = r.hasGt() ? r.getGt() : null;
    }
    if (lte != null && value > lte) {
      violations.add(at + ": " + value + " must be <= " + lte);
    }
    if (lt != null && value >= lt) {
      violations.add(at + ": " + value + " must be < " + lt);
    }
    if (gte != null && value < gte) {
      violations.add(at + ": " + value + " must be >= " + gte);
    }
    if (gt != null && value <= gt) {
      violations.add(at + ": " + value + " must be > " + gt);
    }
  }
}
