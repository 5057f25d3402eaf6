package dev.weir.core.cluster.peer;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.proto.gubernator.ForwardAnswers;
import dev.weir.proto.gubernator.ForwardBatch;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The wire format of the {@code ForwardBatches} stream ({@code ForwardBatch} one way, {@code
 * ForwardAnswers} the other) read straight into core requests and answers and written straight
 * from them, without protobuf message objects in between (docs/benchmarks.md shows what the
 * generated classes cost the owner of a forwarded batch).
 *
 * <p>A message with a field the fast reader does not read is read again by the generated parser
 * ({@link RateLimitWire}), so every message means what it means to protobuf-java and a malformed one
 * fails with protobuf-java's error. A batch's items past {@link RateLimitService#MAX_BATCH_SIZE}
 * + 1 are skipped, not read: such a batch is refused whole.
 */
final class ForwardCodec {

  private static final int ID_FIELD = 1;
  private static final int ITEMS_FIELD = 2;
  private static final int ERROR_CODE_FIELD = 3;
  private static final int ERROR_FIELD = 4;
  private static final int ID_TAG = ID_FIELD << 3;
  private static final int ITEMS_TAG = ITEMS_FIELD << 3 | 2;
  private static final int ERROR_CODE_TAG = ERROR_CODE_FIELD << 3;
  private static final int ERROR_TAG = ERROR_FIELD << 3 | 2;

  private ForwardCodec() {}

  /** One forwarded batch: its id on the stream and its items, in order. */
  record Batch(long id, List<RateLimitRequest> requests) {}

  /**
   * The answer to the batch with {@code id}: one answer per item, in order, or, when {@code
   * errorCode} is not 0 ({@code OK}), the gRPC status code and message the whole batch was refused
   * with.
   */
  record Answers(long id, List<RateLimitResponse> answers, int errorCode, String error) {

    /** Returns the answers to the batch {@code id}. */
    static Answers of(long id, List<RateLimitResponse> answers) {
      return new Answers(id, answers, 0, "");
    }

    /** Returns the refusal of the whole batch {@code id} with status code {@code code}. */
    static Answers refused(long id, int code, String error) {
      return new Answers(id, List.of(), code, error);
    }
  }

  /**
   * Returns the serialized {@code ForwardBatch} of {@code batch}: each item as {@link
   * PeerProtos#toProto(RateLimitRequest)} would send it.
   */
  static byte[] encode(Batch batch) {
    List<RateLimitRequest> items = batch.requests();
    int n = items.size();
    int[] sizes = new int[n];
    List<Map<String, String>> metadata = new ArrayList<>(n);
    int total = batch.id() == 0 ? 0 : CodedOutputStream.computeUInt64Size(ID_FIELD, batch.id());
    for (int i = 0; i < n; i++) {
      RateLimitRequest r = items.get(i);
      Map<String, String> sent = PeerProtos.forwardedMetadata(r.metadata());
      metadata.add(sent);
      sizes[i] = RateLimitWire.requestSize(r, sent);
      total += RateLimitWire.nestedSize(ITEMS_FIELD, sizes[i]);
    }
    byte[] bytes = new byte[total];
    CodedOutputStream out = CodedOutputStream.newInstance(bytes);
    try {
      if (batch.id() != 0) {
        out.writeUInt64(ID_FIELD, batch.id());
      }
      for (int i = 0; i < n; i++) {
        RateLimitWire.writeNestedHeader(out, ITEMS_FIELD, sizes[i]);
        RateLimitWire.writeRequest(out, items.get(i), metadata.get(i));
      }
      out.checkNoSpaceLeft();
    } catch (IOException e) {
      throw new IllegalStateException("ForwardBatch did not fit its computed size", e);
    }
    return bytes;
  }

  /** Returns the serialized {@code ForwardAnswers} of {@code answers}. */
  static byte[] encode(Answers answers) {
    List<RateLimitResponse> items = answers.answers();
    int n = items.size();
    int[] sizes = new int[n];
    int total = answers.id() == 0 ? 0 : CodedOutputStream.computeUInt64Size(ID_FIELD, answers.id());
    for (int i = 0; i < n; i++) {
      sizes[i] = RateLimitWire.responseSize(items.get(i));
      total += RateLimitWire.nestedSize(ITEMS_FIELD, sizes[i]);
    }
    if (answers.errorCode() != 0) {
      total += CodedOutputStream.computeInt32Size(ERROR_CODE_FIELD, answers.errorCode());
    }
    if (!answers.error().isEmpty()) {
      total += CodedOutputStream.computeStringSize(ERROR_FIELD, answers.error());
    }
    byte[] bytes = new byte[total];
    CodedOutputStream out = CodedOutputStream.newInstance(bytes);
    try {
      if (answers.id() != 0) {
        out.writeUInt64(ID_FIELD, answers.id());
      }
      for (int i = 0; i < n; i++) {
        RateLimitWire.writeNestedHeader(out, ITEMS_FIELD, sizes[i]);
        RateLimitWire.writeResponse(out, items.get(i));
      }
      if (answers.errorCode() != 0) {
        out.writeInt32(ERROR_CODE_FIELD, answers.errorCode());
      }
      if (!answers.error().isEmpty()) {
        out.writeString(ERROR_FIELD, answers.error());
      }
      out.checkNoSpaceLeft();
    } catch (IOException e) {
      throw new IllegalStateException("ForwardAnswers did not fit its computed size", e);
    }
    return bytes;
  }

  /**
   * Returns the batch in the serialized {@code ForwardBatch} {@code bytes}, its items as {@link
   * PeerProtos#fromProto(dev.weir.proto.gubernator.RateLimitReq)} gives them.
   *
   * @throws InvalidProtocolBufferException when {@code bytes} is not a {@code ForwardBatch}
   */
  static Batch decodeBatch(byte[] bytes) throws InvalidProtocolBufferException {
    Batch fast = null;
    try {
      fast = readBatch(bytes);
    } catch (IOException | RuntimeException e) {
      // The generated parser decides, and names the fault.
    }
    if (fast != null) {
      return fast;
    }
    ForwardBatch batch = ForwardBatch.parseFrom(bytes);
    List<RateLimitRequest> items = new ArrayList<>(batch.getRequestsCount());
    batch.getRequestsList().forEach(r -> items.add(PeerProtos.fromProto(r)));
    return new Batch(batch.getId(), items);
  }

  /**
   * Returns the answers in the serialized {@code ForwardAnswers} {@code bytes}.
   *
   * @throws InvalidProtocolBufferException when {@code bytes} is not a {@code ForwardAnswers}
   */
  static Answers decodeAnswers(byte[] bytes) throws InvalidProtocolBufferException {
    Answers fast = null;
    try {
      fast = readAnswers(bytes);
    } catch (IOException | RuntimeException e) {
      // The generated parser decides, and names the fault.
    }
    if (fast != null) {
      return fast;
    }
    ForwardAnswers answers = ForwardAnswers.parseFrom(bytes);
    List<RateLimitResponse> items = new ArrayList<>(answers.getRateLimitsCount());
    answers.getRateLimitsList().forEach(a -> items.add(PeerProtos.fromProto(a)));
    return new Answers(answers.getId(), items, answers.getErrorCode(), answers.getError());
  }

  private static Batch readBatch(byte[] bytes) throws IOException {
    CodedInputStream in = CodedInputStream.newInstance(bytes);
    long id = 0;
    List<RateLimitRequest> items = new ArrayList<>();
    for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
      if (tag == ID_TAG) {
        id = in.readUInt64();
      } else if (tag != ITEMS_TAG) {
        return null;
      } else if (items.size() > RateLimitService.MAX_BATCH_SIZE) {
        in.skipField(tag);
      } else {
        int outer = in.pushLimit(in.readRawVarint32());
        RateLimitRequest item = RateLimitWire.readRequest(in);
        if (item == null) {
          return null;
        }
        in.popLimit(outer);
        items.add(item);
      }
    }
    return new Batch(id, items);
  }

  private static Answers readAnswers(byte[] bytes) throws IOException {
    CodedInputStream in = CodedInputStream.newInstance(bytes);
    long id = 0;
    int errorCode = 0;
    String error = "";
    List<RateLimitResponse> items = new ArrayList<>();
    for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
      switch (tag) {
        case ID_TAG -> id = in.readUInt64();
        case ERROR_CODE_TAG -> errorCode = in.readInt32();
        case ERROR_TAG -> error = in.readStringRequireUtf8();
        case ITEMS_TAG -> {
          int outer = in.pushLimit(in.readRawVarint32());
          RateLimitResponse item = RateLimitWire.readResponse(in);
          if (item == null) {
            return null;
          }
          in.popLimit(outer);
          items.add(item);
        }
        default -> {
          return null;
        }
      }
    }
    return new Answers(id, items, errorCode, error);
  }
}
