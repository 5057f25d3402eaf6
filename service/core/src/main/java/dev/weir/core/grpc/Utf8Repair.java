package dev.weir.core.grpc;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.WireFormat;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * Rewrites a serialized protobuf message so that every string field, at any depth, holds valid
 * UTF-8: each malformed byte sequence becomes U+FFFD, as Java decodes it; every other byte, unknown
 * fields included, is copied as it is.
 *
 * <p>A proto3 parser refuses a whole message for one string field that is not UTF-8, and Envoy
 * copies request header values into descriptor values byte for byte, so a client could otherwise
 * turn every limit of its request into a refused call, which Envoy lets through.
 */
public final class Utf8Repair {

  /** The deepest message nesting repaired, the limit protobuf's own parser applies. */
  static final int MAX_DEPTH = 100;

  private Utf8Repair() {}

  /** Returns whether {@code failure} or one of its causes is protobuf's invalid UTF-8 refusal. */
  public static boolean isInvalidUtf8(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof InvalidProtocolBufferException
          && t.getMessage() != null
          && t.getMessage().contains("invalid UTF-8")) {
        return true;
      }
    }
    return false;
  }

  /**
   * Returns {@code message}, a serialized {@code type}, with its string fields made valid UTF-8.
   *
   * @throws InvalidProtocolBufferException when {@code message} is not a well-formed message or
   *     nests deeper than {@value #MAX_DEPTH}
   */
  public static byte[] repair(Descriptor type, byte[] message) throws InvalidProtocolBufferException {
    try {
      return repair(type, message, 0);
    } catch (InvalidProtocolBufferException e) {
      throw e;
    } catch (IOException e) {
      throw new InvalidProtocolBufferException(e);
    }
  }

  private static byte[] repair(Descriptor type, byte[] message, int depth) throws IOException {
    if (depth > MAX_DEPTH) {
      throw new InvalidProtocolBufferException("message nests deeper than " + MAX_DEPTH);
    }
    CodedInputStream in = CodedInputStream.newInstance(message);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(message.length);
    CodedOutputStream out = CodedOutputStream.newInstance(bytes);
    for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
      FieldDescriptor field = type.findFieldByNumber(WireFormat.getTagFieldNumber(tag));
      if (field != null && WireFormat.getTagWireType(tag) == WireFormat.WIRETYPE_LENGTH_DELIMITED) {
        if (field.getType() == FieldDescriptor.Type.STRING) {
          out.writeByteArray(field.getNumber(), validUtf8(in.readByteArray()));
          continue;
        }
        if (field.getType() == FieldDescriptor.Type.MESSAGE) {
          out.writeByteArray(
              field.getNumber(), repair(field.getMessageType(), in.readByteArray(), depth + 1));
          continue;
        }
      }
      in.skipField(tag, out);
    }
    out.flush();
    return bytes.toByteArray();
  }

  private static byte[] validUtf8(byte[] value) {
    return new String(value, StandardCharsets.UTF_8).getBytes(StandardCharsets.UTF_8);
  }
}
