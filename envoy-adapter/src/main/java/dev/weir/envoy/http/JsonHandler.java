package dev.weir.envoy.http;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.weir.core.http.HttpResponses;
import dev.weir.envoy.service.ShouldRateLimitHandler;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.grpc.Status;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletionException;

/**
 * {@code POST /json}, as envoyproxy/ratelimit serves it: a protojson {@code RateLimitRequest} in,
 * the protojson {@code RateLimitResponse} out, with 200 for OK and 429 for OVER_LIMIT.
 *
 * <p>A body that is not a request gets 400; a request the service rejects gets the HTTP status of
 * its gRPC code (400 for INVALID_ARGUMENT, 503 for UNAVAILABLE). Error bodies are {@code
 * {"code":<gRPC code>,"message":"..."}}.
 */
public final class JsonHandler implements HttpHandler {

  private static final int MAX_BODY_BYTES = 1 << 20;

  private final ShouldRateLimitHandler handler;
  private final JsonFormat.Parser parser = JsonFormat.parser().ignoringUnknownFields();
  private final JsonFormat.Printer printer = JsonFormat.printer().omittingInsignificantWhitespace();

  /** Creates the endpoint. */
  public JsonHandler(ShouldRateLimitHandler handler) {
    this.handler = handler;
  }

  @Override
  public void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      if (!exchange.getRequestMethod().equals("POST")) {
        exchange.getResponseHeaders().set("Allow", "POST");
        sendError(exchange, 405, Status.Code.UNIMPLEMENTED, "Method Not Allowed");
        return;
      }
      byte[] body;
      try (InputStream in = exchange.getRequestBody()) {
        body = in.readNBytes(MAX_BODY_BYTES + 1);
      }
      if (body.length > MAX_BODY_BYTES) {
        sendError(exchange, 413, Status.Code.INVALID_ARGUMENT, "request body larger than 1 MiB");
        return;
      }
      RateLimitRequest.Builder request = RateLimitRequest.newBuilder();
      try {
        parser.merge(new String(body, StandardCharsets.UTF_8), request);
      } catch (InvalidProtocolBufferException | RuntimeException e) {
        sendError(
            exchange, 400, Status.Code.INVALID_ARGUMENT, "invalid request body: " + e.getMessage());
        return;
      }
      RateLimitResponse response;
      try {
        response = handler.handle(request.build()).join();
      } catch (CompletionException e) {
        Status status = Status.fromThrowable(e);
        sendError(
            exchange,
            httpStatus(status.getCode()),
            status.getCode(),
            String.valueOf(status.getDescription()));
        return;
      }
      int code = response.getOverallCode() == RateLimitResponse.Code.OVER_LIMIT ? 429 : 200;
      send(exchange, code, printer.print(response));
    }
  }

  private static int httpStatus(Status.Code code) {
    return switch (code) {
      case INVALID_ARGUMENT, OUT_OF_RANGE -> 400;
      case UNAVAILABLE -> 503;
      default -> 500;
    };
  }

  private static void sendError(HttpExchange exchange, int status, Status.Code code, String message)
      throws IOException {
    HttpResponses.sendJson(
        exchange,
        status,
        "{\"code\":" + code.value() + ",\"message\":" + HttpResponses.jsonString(message) + "}");
  }

  private static void send(HttpExchange exchange, int status, String json) throws IOException {
    HttpResponses.sendJson(exchange, status, json);
  }
}
