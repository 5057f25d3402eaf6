package dev.weir.gubernator;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import dev.weir.core.cluster.peer.RateLimitWire;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The wire format of {@code GetRateLimits} read straight into core requests and written straight
 * from core responses, without protobuf message objects in between (docs/benchmarks.md shows what
 * the generated classes cost on this path).
 *
 * <p>{@link #decode} reads the fields of {@code RateLimitReq}, each with its declared wire type, with
 * protobuf's own {@link CodedInputStream} ({@link RateLimitWire}); a message with anything else in
 * it (unknown fields, a field with another wire type) or that fails to parse is read again by the
 * generated parser, so every message means what it means to protobuf-java and a malformed one
 * fails with protobuf-java's error. Either way a message is
 * read only up to its first item over {@link RateLimitService#MAX_BATCH_SIZE}, which is enough to
 * refuse the call. {@link #encode} writes the bytes the generated {@code GetRateLimitsResp} would
 * write for the same answers.
 */
final class GetRateLimitsCodec {

  // GetRateLimitsReq's requests (field number << 3 | wire type 2, length-delimited).
  private static final int REQUESTS_TAG = 1 << 3 | 2;

  private static final int RESPONSES_FIELD = 1;

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
      RateLimitRequest item = RateLimitWire.readRequest(in);
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


  /** Returns the serialized {@code GetRateLimitsResp} holding {@code answers}, in order. */
  static byte[] encode(List<RateLimitResponse> answers) {
    int n = answers.size();
    int[] sizes = new int[n];
    int total = 0;
    for (int i = 0; i < n; i++) {
      sizes[i] = RateLimitWire.responseSize(answers.get(i));
      total += RateLimitWire.nestedSize(RESPONSES_FIELD, sizes[i]);
    }
    byte[] bytes = new byte[total];
    CodedOutputStream out = CodedOutputStream.newInstance(bytes);
    try {
      for (int i = 0; i < n; i++) {
        RateLimitWire.writeNestedHeader(out, RESPONSES_FIELD, sizes[i]);
        RateLimitWire.writeResponse(out, answers.get(i));
      }
      out.checkNoSpaceLeft();
    } catch (IOException e) {
      throw new IllegalStateException("GetRateLimitsResp did not fit its computed size", e);
    }
    return bytes;
  }



}
