package dev.weir.envoy.http;

import com.google.gson.JsonElement;
import com.google.gson.JsonParser;
import com.google.gson.stream.JsonReader;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import dev.weir.envoy.config.Units;
import dev.weir.envoy.service.ShouldRateLimitHandler;
import dev.weir.http.EnumValues;
import dev.weir.http.HttpAnswer;
import dev.weir.http.HttpCall;
import dev.weir.http.HttpHandler;
import dev.weir.http.LongNumbers;
import dev.weir.http.ParserMessages;
import dev.weir.http.ProtoJsonTypes;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.type.v3.RateLimitUnit;
import io.grpc.Status;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletionStage;

/**
 * {@code POST /json}, as envoyproxy/ratelimit serves it: a protojson {@code RateLimitRequest} in,
 * the protojson {@code RateLimitResponse} out, with 200 for OK and 429 for OVER_LIMIT, answered
 * when the decision completes. The response's {@code response_headers_to_add} (the RateLimit
 * headers, when enabled) are also sent as HTTP headers, on 200 and 429 alike.
 *
 * <p>A body that is not a request gets 400, naming the field for a value of the wrong JSON type
 * ({@link ProtoJsonTypes}) and for an enum value that is neither a name the enum declares nor a
 * whole 32-bit number ({@link EnumValues}), such as a limit override's {@code "unit":"hour"}, which
 * the parser, ignoring unknown fields, would otherwise read as {@code UNKNOWN}; a request the service rejects gets the HTTP status of
 * its gRPC code (400 for INVALID_ARGUMENT, 503 for UNAVAILABLE). Error bodies are {@code
 * {"code":<gRPC code>,"message":"..."}}. The listener caps the body ({@code
 * WEIR_HTTP_MAX_BODY_SIZE}) and answers other methods 405.
 */
public final class JsonHandler implements HttpHandler {

  private final ShouldRateLimitHandler handler;
  private final JsonFormat.Parser strict = JsonFormat.parser();
  private final JsonFormat.Parser lenient = JsonFormat.parser().ignoringUnknownFields();
  private final JsonFormat.Printer printer = JsonFormat.printer().omittingInsignificantWhitespace();

  /** Creates the endpoint. */
  public JsonHandler(ShouldRateLimitHandler handler) {
    this.handler = handler;
  }

  @Override
  public CompletionStage<HttpAnswer> handle(HttpCall call) {
    RateLimitRequest.Builder request = RateLimitRequest.newBuilder();
    String body = new String(call.body(), StandardCharsets.UTF_8);
    Optional<String> longNumber = LongNumbers.refusal(body, RateLimitRequest.getDescriptor());
    Optional<String> refusal =
        longNumber.or(() -> ProtoJsonTypes.refusal(body, RateLimitRequest.getDescriptor()));
    if (refusal.isPresent()) {
      return error(400, Status.Code.INVALID_ARGUMENT, "invalid request body: " + refusal.get())
          .completed();
    }
    try {
      strict.merge(body, request);
    } catch (InvalidProtocolBufferException | RuntimeException refused) {
      Optional<String> droppedEnum = droppedEnum(body);
      if (droppedEnum.isPresent()) {
        return error(400, Status.Code.INVALID_ARGUMENT, "invalid request body: " + droppedEnum.get())
            .completed();
      }
      try {
        request.clear();
        lenient.merge(body, request);
      } catch (InvalidProtocolBufferException | RuntimeException e) {
        return error(
                400,
                Status.Code.INVALID_ARGUMENT,
                "invalid request body: " + ParserMessages.of(e))
            .completed();
      }
    }
    return handler
        .decide(request.build())
        .handle(
            (response, failure) -> {
              if (failure != null) {
                Status status = Status.fromThrowable(failure);
                return error(
                    httpStatus(status.getCode()),
                    status.getCode(),
                    String.valueOf(status.getDescription()));
              }
              int code = response.getOverallCode() == RateLimitResponse.Code.OVER_LIMIT ? 429 : 200;
              return print(code, response);
            });
  }

  /**
   * Returns the refusal of the first enum value in {@code body} the lenient parser would drop,
   * listing the units a limit override takes; empty when there is none or the body is malformed.
   */
  private static Optional<String> droppedEnum(String body) {
    JsonElement tree;
    try {
      tree = JsonParser.parseReader(new JsonReader(new StringReader(body)));
    } catch (RuntimeException malformed) {
      return Optional.empty();
    }
    if (!tree.isJsonObject()) {
      return Optional.empty();
    }
    return EnumValues.firstDropped(tree.getAsJsonObject(), RateLimitRequest.getDescriptor())
        .map(dropped -> dropped.message(JsonHandler::allowed));
  }

  /** Returns whether a request may hold {@code value}: any but a unit no override takes. */
  private static boolean allowed(EnumValueDescriptor value) {
    if (!value.getType().equals(RateLimitUnit.getDescriptor())) {
      return true;
    }
    return Units.fromOverride(RateLimitUnit.forNumber(value.getNumber())).isPresent();
  }

  private HttpAnswer print(int code, RateLimitResponse response) {
    try {
      HttpAnswer answer = HttpAnswer.json(code, printer.print(response));
      if (response.getResponseHeadersToAddCount() == 0) {
        return answer;
      }
      Map<String, String> headers = new LinkedHashMap<>();
      for (HeaderValue header : response.getResponseHeadersToAddList()) {
        headers.put(header.getKey(), header.getValue());
      }
      return new HttpAnswer(code, answer.contentType(), answer.body(), headers);
    } catch (InvalidProtocolBufferException e) {
      return error(500, Status.Code.INTERNAL, "cannot print answer: " + e.getMessage());
    }
  }

  private static int httpStatus(Status.Code code) {
    return switch (code) {
      case INVALID_ARGUMENT, OUT_OF_RANGE -> 400;
      case UNAVAILABLE -> 503;
      default -> 500;
    };
  }

  private static HttpAnswer error(int status, Status.Code code, String message) {
    return HttpAnswer.json(
        status,
        "{\"code\":" + code.value() + ",\"message\":" + HttpAnswer.jsonString(message) + "}");
  }
}
