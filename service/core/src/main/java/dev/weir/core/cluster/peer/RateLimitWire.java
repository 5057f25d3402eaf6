package dev.weir.core.cluster.peer;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.WireFormat;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import java.io.IOException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The wire forms of {@code pb.gubernator.RateLimitReq} and {@code RateLimitResp} read straight into
 * core requests and answers and written straight from them, without protobuf message objects in
 * between: what the codecs of the native front door and the forwarding stream share.
 *
 * <p>Readers read the fields of the schema, each with its declared wire type, with protobuf's own
 * {@link CodedInputStream}, and return null for a message with anything else in it (an unknown
 * field, a field with another wire type), for the caller to read the whole message again with the
 * generated parser, so that every message means what it means to protobuf-java. A map entry read
 * twice keeps its last value, as protobuf's maps do. Writers write what the generated classes write
 * for the same values (fields at their default left out).
 */
public final class RateLimitWire {

  private static final int NAME_TAG = 1 << 3 | 2;
  private static final int UNIQUE_KEY_TAG = 2 << 3 | 2;
  private static final int HITS_TAG = 3 << 3;
  private static final int LIMIT_TAG = 4 << 3;
  private static final int DURATION_TAG = 5 << 3;
  private static final int ALGORITHM_TAG = 6 << 3;
  private static final int BEHAVIOR_TAG = 7 << 3;
  private static final int BURST_TAG = 8 << 3;
  private static final int REQUEST_METADATA_TAG = 9 << 3 | 2;
  private static final int CREATED_AT_TAG = 10 << 3;

  private static final int STATUS_TAG = 1 << 3;
  private static final int ANSWER_LIMIT_TAG = 2 << 3;
  private static final int REMAINING_TAG = 3 << 3;
  private static final int RESET_TIME_TAG = 4 << 3;
  private static final int ERROR_TAG = 5 << 3 | 2;
  private static final int ANSWER_METADATA_TAG = 6 << 3 | 2;

  private static final int NAME_FIELD = 1;
  private static final int UNIQUE_KEY_FIELD = 2;
  private static final int HITS_FIELD = 3;
  private static final int LIMIT_FIELD = 4;
  private static final int DURATION_FIELD = 5;
  private static final int ALGORITHM_FIELD = 6;
  private static final int BEHAVIOR_FIELD = 7;
  private static final int BURST_FIELD = 8;
  private static final int REQUEST_METADATA_FIELD = 9;
  private static final int CREATED_AT_FIELD = 10;

  private static final int STATUS_FIELD = 1;
  private static final int ANSWER_LIMIT_FIELD = 2;
  private static final int REMAINING_FIELD = 3;
  private static final int RESET_TIME_FIELD = 4;
  private static final int ERROR_FIELD = 5;
  private static final int ANSWER_METADATA_FIELD = 6;

  private static final int ENTRY_KEY_FIELD = 1;
  private static final int ENTRY_VALUE_FIELD = 2;
  private static final int ENTRY_KEY_TAG = ENTRY_KEY_FIELD << 3 | 2;
  private static final int ENTRY_VALUE_TAG = ENTRY_VALUE_FIELD << 3 | 2;
  private static final int OVER_LIMIT_VALUE = dev.weir.proto.gubernator.Status.OVER_LIMIT_VALUE;

  private RateLimitWire() {}

  /**
   * Reads one {@code RateLimitReq} up to {@code in}'s current limit, as {@link
   * PeerProtos#fromProto(dev.weir.proto.gubernator.RateLimitReq)} of the generated parser's message
   * would give it; null when the message holds a field this method does not read.
   *
   * @throws IOException when the message is malformed where this method reads it
   */
  public static RateLimitRequest readRequest(CodedInputStream in) throws IOException {
    String name = "";
    String uniqueKey = "";
    long hits = 0;
    long limit = 0;
    long duration = 0;
    int algorithm = 0;
    int behavior = 0;
    long burst = 0;
    long createdAt = 0;
    Map<String, String> metadata = null;
    for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
      switch (tag) {
        case NAME_TAG -> name = in.readStringRequireUtf8();
        case UNIQUE_KEY_TAG -> uniqueKey = in.readStringRequireUtf8();
        case HITS_TAG -> hits = in.readInt64();
        case LIMIT_TAG -> limit = in.readInt64();
        case DURATION_TAG -> duration = in.readInt64();
        case ALGORITHM_TAG -> algorithm = in.readEnum();
        case BEHAVIOR_TAG -> behavior = in.readEnum();
        case BURST_TAG -> burst = in.readInt64();
        case CREATED_AT_TAG -> createdAt = in.readInt64();
        case REQUEST_METADATA_TAG -> {
          metadata = metadata == null ? new LinkedHashMap<>() : metadata;
          if (!readEntry(in, metadata)) {
            return null;
          }
        }
        default -> {
          return null;
        }
      }
    }
    return new RateLimitRequest(
        name,
        uniqueKey,
        hits,
        limit,
        duration,
        algorithm,
        behavior,
        burst,
        createdAt,
        metadata == null ? Map.of() : Collections.unmodifiableMap(metadata));
  }

  /**
   * Reads one {@code RateLimitResp} up to {@code in}'s current limit, as {@link
   * PeerProtos#fromProto(dev.weir.proto.gubernator.RateLimitResp)} of the generated parser's message
   * would give it; null when the message holds a field this method does not read.
   *
   * @throws IOException when the message is malformed where this method reads it
   */
  public static RateLimitResponse readResponse(CodedInputStream in) throws IOException {
    int status = 0;
    long limit = 0;
    long remaining = 0;
    long resetTime = 0;
    String error = "";
    Map<String, String> metadata = null;
    for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
      switch (tag) {
        case STATUS_TAG -> status = in.readEnum();
        case ANSWER_LIMIT_TAG -> limit = in.readInt64();
        case REMAINING_TAG -> remaining = in.readInt64();
        case RESET_TIME_TAG -> resetTime = in.readInt64();
        case ERROR_TAG -> error = in.readStringRequireUtf8();
        case ANSWER_METADATA_TAG -> {
          metadata = metadata == null ? new LinkedHashMap<>() : metadata;
          if (!readEntry(in, metadata)) {
            return null;
          }
        }
        default -> {
          return null;
        }
      }
    }
    return new RateLimitResponse(
        PeerProtos.statusOf(status),
        limit,
        remaining,
        resetTime,
        error,
        metadata == null ? Map.of() : Collections.unmodifiableMap(metadata));
  }

  /** Reads one map entry into {@code into}; false when it holds a field other than key and value. */
  private static boolean readEntry(CodedInputStream in, Map<String, String> into)
      throws IOException {
    int outer = in.pushLimit(in.readRawVarint32());
    String key = "";
    String value = "";
    for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
      switch (tag) {
        case ENTRY_KEY_TAG -> key = in.readStringRequireUtf8();
        case ENTRY_VALUE_TAG -> value = in.readStringRequireUtf8();
        default -> {
          return false;
        }
      }
    }
    in.popLimit(outer);
    into.put(key, value);
    return true;
  }

  /**
   * Returns the size of {@code r} as a {@code RateLimitReq} carrying {@code metadata} (what of its
   * metadata goes on the wire: {@link PeerProtos#forwardedMetadata}) and {@code created_at} when
   * set.
   */
  public static int requestSize(RateLimitRequest r, Map<String, String> metadata) {
    int size = 0;
    if (!r.name().isEmpty()) {
      size += CodedOutputStream.computeStringSize(NAME_FIELD, r.name());
    }
    if (!r.uniqueKey().isEmpty()) {
      size += CodedOutputStream.computeStringSize(UNIQUE_KEY_FIELD, r.uniqueKey());
    }
    size += int64Size(HITS_FIELD, r.hits());
    size += int64Size(LIMIT_FIELD, r.limit());
    size += int64Size(DURATION_FIELD, r.duration());
    if (r.algorithm() != 0) {
      size += CodedOutputStream.computeEnumSize(ALGORITHM_FIELD, r.algorithm());
    }
    if (r.behavior() != 0) {
      size += CodedOutputStream.computeEnumSize(BEHAVIOR_FIELD, r.behavior());
    }
    size += int64Size(BURST_FIELD, r.burst());
    size += metadataSize(REQUEST_METADATA_FIELD, metadata);
    if (r.createdAt() != 0) {
      size += CodedOutputStream.computeInt64Size(CREATED_AT_FIELD, r.createdAt());
    }
    return size;
  }

  /** Writes {@code r} as {@link #requestSize} measured it. */
  public static void writeRequest(
      CodedOutputStream out, RateLimitRequest r, Map<String, String> metadata) throws IOException {
    if (!r.name().isEmpty()) {
      out.writeString(NAME_FIELD, r.name());
    }
    if (!r.uniqueKey().isEmpty()) {
      out.writeString(UNIQUE_KEY_FIELD, r.uniqueKey());
    }
    writeInt64(out, HITS_FIELD, r.hits());
    writeInt64(out, LIMIT_FIELD, r.limit());
    writeInt64(out, DURATION_FIELD, r.duration());
    if (r.algorithm() != 0) {
      out.writeEnum(ALGORITHM_FIELD, r.algorithm());
    }
    if (r.behavior() != 0) {
      out.writeEnum(BEHAVIOR_FIELD, r.behavior());
    }
    writeInt64(out, BURST_FIELD, r.burst());
    writeMetadata(out, REQUEST_METADATA_FIELD, metadata);
    if (r.createdAt() != 0) {
      out.writeInt64(CREATED_AT_FIELD, r.createdAt());
    }
  }

  /** Returns the size of {@code r} as a {@code RateLimitResp}. */
  public static int responseSize(RateLimitResponse r) {
    int size = 0;
    if (r.status() == Status.OVER_LIMIT) {
      size += CodedOutputStream.computeEnumSize(STATUS_FIELD, OVER_LIMIT_VALUE);
    }
    size += int64Size(ANSWER_LIMIT_FIELD, r.limit());
    size += int64Size(REMAINING_FIELD, r.remaining());
    size += int64Size(RESET_TIME_FIELD, r.resetTime());
    if (r.isError()) {
      size += CodedOutputStream.computeStringSize(ERROR_FIELD, r.error());
    }
    return size + metadataSize(ANSWER_METADATA_FIELD, r.metadata());
  }

  /** Writes {@code r} as {@link #responseSize} measured it. */
  public static void writeResponse(CodedOutputStream out, RateLimitResponse r) throws IOException {
    if (r.status() == Status.OVER_LIMIT) {
      out.writeEnum(STATUS_FIELD, OVER_LIMIT_VALUE);
    }
    writeInt64(out, ANSWER_LIMIT_FIELD, r.limit());
    writeInt64(out, REMAINING_FIELD, r.remaining());
    writeInt64(out, RESET_TIME_FIELD, r.resetTime());
    if (r.isError()) {
      out.writeString(ERROR_FIELD, r.error());
    }
    writeMetadata(out, ANSWER_METADATA_FIELD, r.metadata());
  }

  /** Returns the size of a length-delimited field {@code field} of {@code size} bytes. */
  public static int nestedSize(int field, int size) {
    return CodedOutputStream.computeTagSize(field)
        + CodedOutputStream.computeUInt32SizeNoTag(size)
        + size;
  }

  /** Writes the tag and length of a length-delimited field {@code field} of {@code size} bytes. */
  public static void writeNestedHeader(CodedOutputStream out, int field, int size)
      throws IOException {
    out.writeTag(field, WireFormat.WIRETYPE_LENGTH_DELIMITED);
    out.writeUInt32NoTag(size);
  }

  private static int int64Size(int field, long value) {
    return value == 0 ? 0 : CodedOutputStream.computeInt64Size(field, value);
  }

  private static void writeInt64(CodedOutputStream out, int field, long value)
      throws IOException {
    if (value != 0) {
      out.writeInt64(field, value);
    }
  }

  private static int metadataSize(int field, Map<String, String> metadata) {
    if (metadata instanceof EncodedMetadata encoded) {
      return encoded.encodedSize(field);
    }
    int size = 0;
    for (Map.Entry<String, String> entry : metadata.entrySet()) {
      size += nestedSize(field, entrySize(entry));
    }
    return size;
  }

  private static void writeMetadata(CodedOutputStream out, int field, Map<String, String> metadata)
      throws IOException {
    if (metadata instanceof EncodedMetadata encoded) {
      encoded.writeTo(out, field);
      return;
    }
    for (Map.Entry<String, String> entry : metadata.entrySet()) {
      writeNestedHeader(out, field, entrySize(entry));
      out.writeString(ENTRY_KEY_FIELD, entry.getKey());
      out.writeString(ENTRY_VALUE_FIELD, entry.getValue());
    }
  }

  private static int entrySize(Map.Entry<String, String> entry) {
    return CodedOutputStream.computeStringSize(ENTRY_KEY_FIELD, entry.getKey())
        + CodedOutputStream.computeStringSize(ENTRY_VALUE_FIELD, entry.getValue());
  }
}
