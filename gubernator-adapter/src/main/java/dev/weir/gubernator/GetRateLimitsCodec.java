package dev.weir.gubernator;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.WireFormat;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The wire format of {@code GetRateLimits} read straight into core requests and written straight
 * from core responses, without protobuf message objects in between (docs/benchmarks.md shows what
 * the generated classes cost on this path).
 *
 * <p>{@link #decode} reads the fields a Gubernator client sends (1–8 and 10 of {@code
 * RateLimitReq}, each with its declared wire type) with protobuf's own {@link CodedInputStream}; a
 * message with anything else in it (metadata, unknown fields, a field with another wire type) or
 * that fails to parse is read again by the generated parser, so every message means what it means
 * to protobuf-java and a malformed one fails with protobuf-java's error. Either way a message is
 * read only up to its first item over {@link RateLimitService#MAX_BATCH_SIZE}, which is enough to
 * refuse the call. {@link #encode} writes the bytes the generated {@code GetRateLimitsResp} would
 * write for the same answers.
 */
final class GetRateLimitsCodec {

  // Tags (field number << 3 | wire type: 0 varint, 2 length-delimited): GetRateLimitsReq's
  // requests, then RateLimitReq's fields.
  private static final int REQUESTS_TAG = 1 << 3 | 2;
  private static final int NAME_TAG = 1 << 3 | 2;
  private static final int UNIQUE_KEY_TAG = 2 << 3 | 2;
  private static final int HITS_TAG = 3 << 3 | 0;
  private static final int LIMIT_TAG = 4 << 3 | 0;
  private static final int DURATION_TAG = 5 << 3 | 0;
  private static final int ALGORITHM_TAG = 6 << 3 | 0;
  private static final int BEHAVIOR_TAG = 7 << 3 | 0;
  private static final int BURST_TAG = 8 << 3 | 0;
  private static final int CREATED_AT_TAG = 10 << 3 | 0;

  private static final int RESPONSES_FIELD = 1;
  private static final int STATUS_FIELD = 1;
  private static final int LIMIT_FIELD = 2;
  private static final int REMAINING_FIELD = 3;
  private static final int RESET_TIME_FIELD = 4;
  private static final int ERROR_FIELD = 5;
  private static final int METADATA_FIELD = 6;
  private static final int ENTRY_KEY_FIELD = 1;
  private static final int ENTRY_VALUE_FIELD = 2;
  private static final int OVER_LIMIT_VALUE = dev.weir.proto.gubernator.Status.OVER_LIMIT_VALUE;

  private GetRateLimitsCodec() {}

  /**
   * Returns the core requests of the serialized {@code GetRateLimitsReq} in {@code bytes}, in
   * order, exactly as {@link ProtoMapping#toModel(GetRateLimitsReq)} of the generated parser's
   * message would; for a message with more than {@link RateLimitService#MAX_BATCH_SIZE} items,
   * only the first {@code MAX_BATCH_SIZE + 1}, and nothing after them is read.
   *
   * @throws InvalidProtocolBufferException when {@code bytes} is not a {@code GetRateLimitsReq}
   */
  static List<RateLimitRequest> decode(byte[] bytes) throws InvalidProtocolBufferException {
    List<RateLimitRequest> items = null;
    try {
      items = decodeCommon(bytes);
    } catch (IOException | RuntimeException e) {
      // The generated parser decides, and names the fault.
    }
    if (items != null) {
      return items;
    }
    return ProtoMapping.toModel(GetRateLimitsReq.parser().parseFrom(bytes, 0, batchEnd(bytes)));
  }

  /**
   * Returns the requests when {@code bytes} holds only the fields read here, up to the first item
   * over {@link RateLimitService#MAX_BATCH_SIZE}, or null.
   *
   * @throws IOException when {@code bytes} is malformed where this method reads it
   */
  static List<RateLimitRequest> decodeCommon(byte[] bytes) throws IOException {
    CodedInputStream in = CodedInputStream.newInstance(bytes);
    List<RateLimitRequest> items = new ArrayList<>();
    for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
      if (tag != REQUESTS_TAG) {
        return null;
      }
      int outer = in.pushLimit(in.readRawVarint32());
      RateLimitRequest item = decodeItem(in);
      if (item == null) {
        return null;
      }
      in.popLimit(outer);
      items.add(item);
      if (RateLimitService.tooManyItems(items.size())) {
        return items;
      }
    }
    return items;
  }

  /**
   * Returns the length of the start of the message {@code bytes} that ends with its first item over
   * {@link RateLimitService#MAX_BATCH_SIZE}, found by skipping fields without reading them; the
   * whole length when there is no such item or the message is malformed before it.
   */
  private static int batchEnd(byte[] bytes) {
    CodedInputStream in = CodedInputStream.newInstance(bytes);
    int items = 0;
    try {
      for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
        in.skipField(tag);
        if (tag == REQUESTS_TAG && ++items > RateLimitService.MAX_BATCH_SIZE) {
          return in.getTotalBytesRead();
        }
      }
    } catch (IOException e) {
      // The generated parser names the fault.
    }
    return bytes.length;
  }

  /** Reads one {@code RateLimitReq} up to the current limit, or returns null. */
  private static RateLimitRequest decodeItem(CodedInputStream in) throws IOException {
    String name = "";
    String uniqueKey = "";
    long hits = 0;
    long limit = 0;
    long duration = 0;
    int algorithm = 0;
    int behavior = 0;
    long burst = 0;
    long createdAt = 0;
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
        default -> {
          return null;
        }
      }
    }
    return new RateLimitRequest(
        name, uniqueKey, hits, limit, duration, algorithm, behavior, burst, createdAt, Map.of());
  }

  /** Returns the serialized {@code GetRateLimitsResp} holding {@code answers}, in order. */
  static byte[] encode(List<RateLimitResponse> answers) {
    int n = answers.size();
    int[] sizes = new int[n];
    int total = 0;
    for (int i = 0; i < n; i++) {
      sizes[i] = itemSize(answers.get(i));
      total +=
          CodedOutputStream.computeTagSize(RESPONSES_FIELD)
              + CodedOutputStream.computeUInt32SizeNoTag(sizes[i])
              + sizes[i];
    }
    byte[] bytes = new byte[total];
    CodedOutputStream out = CodedOutputStream.newInstance(bytes);
    try {
      for (int i = 0; i < n; i++) {
        out.writeTag(RESPONSES_FIELD, WireFormat.WIRETYPE_LENGTH_DELIMITED);
        out.writeUInt32NoTag(sizes[i]);
        writeItem(out, answers.get(i));
      }
      out.checkNoSpaceLeft();
    } catch (IOException e) {
      throw new IllegalStateException("GetRateLimitsResp did not fit its computed size", e);
    }
    return bytes;
  }

  private static int itemSize(RateLimitResponse r) {
    int size = 0;
    if (r.status() == Status.OVER_LIMIT) {
      size += CodedOutputStream.computeEnumSize(STATUS_FIELD, OVER_LIMIT_VALUE);
    }
    if (r.limit() != 0) {
      size += CodedOutputStream.computeInt64Size(LIMIT_FIELD, r.limit());
    }
    if (r.remaining() != 0) {
      size += CodedOutputStream.computeInt64Size(REMAINING_FIELD, r.remaining());
    }
    if (r.resetTime() != 0) {
      size += CodedOutputStream.computeInt64Size(RESET_TIME_FIELD, r.resetTime());
    }
    if (r.isError()) {
      size += CodedOutputStream.computeStringSize(ERROR_FIELD, r.error());
    }
    for (Map.Entry<String, String> entry : r.metadata().entrySet()) {
      int entrySize = entrySize(entry);
      size +=
          CodedOutputStream.computeTagSize(METADATA_FIELD)
              + CodedOutputStream.computeUInt32SizeNoTag(entrySize)
              + entrySize;
    }
    return size;
  }

  private static int entrySize(Map.Entry<String, String> entry) {
    return CodedOutputStream.computeStringSize(ENTRY_KEY_FIELD, entry.getKey())
        + CodedOutputStream.computeStringSize(ENTRY_VALUE_FIELD, entry.getValue());
  }

  private static void writeItem(CodedOutputStream out, RateLimitResponse r) throws IOException {
    if (r.status() == Status.OVER_LIMIT) {
      out.writeEnum(STATUS_FIELD, OVER_LIMIT_VALUE);
    }
    if (r.limit() != 0) {
      out.writeInt64(LIMIT_FIELD, r.limit());
    }
    if (r.remaining() != 0) {
      out.writeInt64(REMAINING_FIELD, r.remaining());
    }
    if (r.resetTime() != 0) {
      out.writeInt64(RESET_TIME_FIELD, r.resetTime());
    }
    if (r.isError()) {
      out.writeString(ERROR_FIELD, r.error());
    }
    for (Map.Entry<String, String> entry : r.metadata().entrySet()) {
      out.writeTag(METADATA_FIELD, WireFormat.WIRETYPE_LENGTH_DELIMITED);
      out.writeUInt32NoTag(entrySize(entry));
      out.writeString(ENTRY_KEY_FIELD, entry.getKey());
      out.writeString(ENTRY_VALUE_FIELD, entry.getValue());
    }
  }
}
