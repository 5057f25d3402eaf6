package dev.weir.gubernator.http;

import com.google.gson.JsonElement;
import com.google.gson.JsonParser;
import com.google.gson.JsonPrimitive;
import com.google.gson.stream.JsonReader;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.limiter.RequestTooLargeException;
import dev.weir.http.EnumValues;
import dev.weir.http.LongNumbers;
import dev.weir.http.ParserMessages;
import dev.weir.http.ProtoJsonTypes;
import dev.weir.proto.gubernator.Behavior;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import java.io.StringReader;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * Reads the protojson body of {@code POST /v1/GetRateLimits} as grpc-gateway does, ignoring unknown
 * fields, but refusing enum names the enums do not declare, which Gubernator's gateway reads as the
 * enum's first value, and enum values that are neither a name nor a whole 32-bit number, which
 * grpc-gateway refuses too ({@link EnumValues}): protobuf-java's parser, ignoring unknown fields,
 * drops both.
 *
 * <p>A body with a number too costly to read ({@link LongNumbers}), that is not standard JSON or
 * has a value of a JSON type its field does not take ({@link ProtoJsonTypes}: a one-element array
 * or a number for a string, which the parser would read anyway), or, after those, with more items
 * than one call may carry ({@link ItemCount}), is refused before anything is parsed: as behind
 * Gubernator's gateway, which reads the whole body before counting its items, a body with both a
 * fault and too many items is refused for the fault. So is a body of too many items with an enum
 * value that is a number no enum value has ({@code 4.5}), which grpc-gateway refuses, wherever it
 * is (reading such a body as a JSON tree for it); an unknown enum name, which Gubernator's gateway
 * reads as 0, leaves such a body too large. A body
 * without unknown fields is parsed once; only one that the strict parser refuses is read again, as
 * a JSON tree (Gson's, as that parser reads it) for the enum check and then ignoring unknown
 * fields.
 */
final class RequestParser {

  private static final JsonFormat.Parser STRICT = JsonFormat.parser();
  private static final JsonFormat.Parser LENIENT = JsonFormat.parser().ignoringUnknownFields();

  private RequestParser() {}

  /**
   * Returns the request {@code json} holds (an empty body is an empty request).
   *
   * @throws InvalidProtocolBufferException with the parser's message ({@link ParserMessages}) for
   *     malformed JSON, or naming the field, the value and the type or values allowed for a value
   *     of the wrong JSON type or an enum value the parser would drop
   * @throws RequestTooLargeException with Gubernator's message when a top-level {@code requests}
   *     array of a body otherwise well-formed has more than {@link RateLimitService#MAX_BATCH_SIZE}
   *     elements, none of them parsed
   */
  static GetRateLimitsReq parse(String json) throws InvalidProtocolBufferException {
    if (json.isBlank()) {
      return GetRateLimitsReq.getDefaultInstance();
    }
    Optional<String> longNumber = LongNumbers.refusal(json, GetRateLimitsReq.getDescriptor());
    if (longNumber.isPresent()) {
      throw new InvalidProtocolBufferException(longNumber.get());
    }
    Optional<String> wrongType = ProtoJsonTypes.refusal(json, GetRateLimitsReq.getDescriptor());
    if (wrongType.isPresent()) {
      throw new InvalidProtocolBufferException(wrongType.get());
    }
    if (ItemCount.overBatch(json)) {
      Optional<String> badNumber =
          dropped(json, JsonPrimitive::isNumber).map(RequestParser::refusal);
      if (badNumber.isPresent()) {
        throw new InvalidProtocolBufferException(badNumber.get());
      }
      throw RequestTooLargeException.overBatchSize();
    }
    GetRateLimitsReq.Builder strict = GetRateLimitsReq.newBuilder();
    try {
      STRICT.merge(json, strict);
      return strict.build();
    } catch (InvalidProtocolBufferException | RuntimeException refused) {
      Optional<String> droppedEnum = droppedEnum(json);
      if (droppedEnum.isPresent()) {
        throw new InvalidProtocolBufferException(droppedEnum.get());
      }
      GetRateLimitsReq.Builder lenient = GetRateLimitsReq.newBuilder();
      try {
        LENIENT.merge(json, lenient);
      } catch (InvalidProtocolBufferException e) {
        InvalidProtocolBufferException refusal =
            new InvalidProtocolBufferException(ParserMessages.of(e));
        refusal.initCause(e);
        throw refusal;
      }
      return lenient.build();
    }
  }

  private static Optional<String> droppedEnum(String json) {
    return dropped(json, v -> true).map(RequestParser::refusal);
  }

  /**
   * Returns the first enum value of {@code json} the parser would drop and {@code which} keeps;
   * empty when none is.
   */
  private static Optional<EnumValues.Dropped> dropped(
      String json, Predicate<JsonPrimitive> which) {
    JsonElement tree;
    try {
      tree = JsonParser.parseReader(new JsonReader(new StringReader(json)));
    } catch (RuntimeException malformed) {
      return Optional.empty();
    }
    if (!tree.isJsonObject()) {
      return Optional.empty();
    }
    return EnumValues.firstDropped(
        tree.getAsJsonObject(), GetRateLimitsReq.getDescriptor(), which);
  }

  /** Returns the refusal of {@code dropped}, with how to combine flags for a behavior. */
  private static String refusal(EnumValues.Dropped dropped) {
    return dropped.message() + flagsHint(dropped.type());
  }

  /** Returns how to combine {@code Behavior} flags, for a refused behavior; empty for any other. */
  private static String flagsHint(EnumDescriptor type) {
    if (!type.equals(Behavior.getDescriptor())) {
      return "";
    }
    return "; to combine flags, send the sum of their numbers, e.g. \"behavior\":"
        + (Behavior.GLOBAL_VALUE + Behavior.DRAIN_OVER_LIMIT_VALUE)
        + " for GLOBAL and DRAIN_OVER_LIMIT";
  }
}
