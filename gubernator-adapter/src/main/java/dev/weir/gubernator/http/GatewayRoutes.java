package dev.weir.gubernator.http;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageOrBuilder;
import com.google.protobuf.util.JsonFormat;
import com.sun.net.httpserver.HttpExchange;
import dev.weir.core.http.HttpResponses;
import dev.weir.core.http.HttpRoute;
import dev.weir.core.health.NodeHealth;
import dev.weir.core.limiter.HealthStatus;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.gubernator.GrpcErrors;
import dev.weir.gubernator.NativeCheck;
import dev.weir.gubernator.ProtoMapping;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.LiveCheckResp;
import io.grpc.Status;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Gubernator's HTTP/JSON gateway as {@link HttpRoute}s: {@code POST /v1/GetRateLimits}, {@code GET
 * /v1/HealthCheck} and {@code GET /v1/LiveCheck}, speaking protojson as grpc-gateway does.
 *
 * <p>Requests accept both field name styles, enums by name or number, int64 as strings or numbers,
 * and ignore unknown fields; an empty body is an empty request. Responses use proto field names
 * ({@code reset_time}), emit unpopulated fields and write int64 as strings. Errors are {@code
 * {"code":N,"message":"...","details":[]}} with grpc-gateway's HTTP status for the gRPC code.
 */
public final class GatewayRoutes {

  /** The largest request body accepted; larger bodies get 413. */
  public static final int MAX_BODY_BYTES = 4 * 1024 * 1024;

  private static final JsonFormat.Parser PARSER = JsonFormat.parser().ignoringUnknownFields();
  private static final JsonFormat.Printer PRINTER =
      JsonFormat.printer()
          .preservingProtoFieldNames()
          .alwaysPrintFieldsWithNoPresence()
          .omittingInsignificantWhitespace();

  private final NativeCheck check;
  private final NodeHealth health;

  /**
   * Creates the gateway answering rate limits from {@code service} with the default input limits
   * and no metering, and probes from {@code health}.
   */
  public GatewayRoutes(RateLimitService service, NodeHealth health) {
    this(new NativeCheck(service, InputLimits.DEFAULTS, CheckMeter.NOOP), health);
  }

  /** Creates the gateway answering rate limits through {@code check} and probes from {@code health}. */
  public GatewayRoutes(NativeCheck check, NodeHealth health) {
    this.check = Objects.requireNonNull(check, "check");
    this.health = Objects.requireNonNull(health, "health");
  }

  /**
   * Returns only the probe routes of {@code health}, {@code GET /v1/HealthCheck} and {@code GET
   * /v1/LiveCheck}, for a listener that must not serve the rate-limit API (the status listener).
   */
  public static List<HttpRoute> healthRoutes(NodeHealth health) {
    return new GatewayRoutes(
            requests -> {
              throw new IllegalStateException("the probe routes serve no rate limits");
            },
            health)
        .healthRoutes();
  }

  /**
   * Returns the gateway's routes, to mount on the node's HTTP listener: {@link #healthRoutes()}
   * and {@code POST /v1/GetRateLimits}.
   */
  public List<HttpRoute> routes() {
    List<HttpRoute> routes = new ArrayList<>(healthRoutes());
    routes.add(0, HttpRoute.post("/v1/GetRateLimits", this::getRateLimits));
    return List.copyOf(routes);
  }

  /**
   * Returns only the probe routes, {@code GET /v1/HealthCheck} and {@code GET /v1/LiveCheck}, for a
   * listener that must not serve the rate-limit API (the status listener). They call no peer, so
   * they are {@linkplain HttpRoute#servedWhenSaturated() served even while the listener is
   * saturated}: an overloaded node is not restarted or taken out of service for it.
   */
  public List<HttpRoute> healthRoutes() {
    return List.of(
        HttpRoute.probe("/v1/HealthCheck", this::healthCheck),
        HttpRoute.probe("/v1/LiveCheck", this::liveCheck));
  }

  private void getRateLimits(HttpExchange exchange) throws IOException {
    byte[] body;
    try (InputStream in = exchange.getRequestBody()) {
      body = in.readNBytes(MAX_BODY_BYTES + 1);
    }
    if (body.length > MAX_BODY_BYTES) {
      HttpResponses.sendError(
          exchange,
          413,
          Status.Code.RESOURCE_EXHAUSTED.value(),
          "request body is larger than the " + MAX_BODY_BYTES + " bytes allowed");
      return;
    }
    GetRateLimitsReq.Builder request = GetRateLimitsReq.newBuilder();
    String json = new String(body, StandardCharsets.UTF_8);
    if (!json.isBlank()) {
      try {
        PARSER.merge(json, request);
      } catch (InvalidProtocolBufferException | RuntimeException e) {
        HttpResponses.sendError(
            exchange, 400, Status.Code.INVALID_ARGUMENT.value(), String.valueOf(e.getMessage()));
        return;
      }
    }
    GetRateLimitsResp response;
    try {
      response = check.check(request.build()).join();
    } catch (RuntimeException e) {
      sendStatus(exchange, GrpcErrors.toStatus(e));
      return;
    }
    sendMessage(exchange, response);
  }

  private void healthCheck(HttpExchange exchange) throws IOException {
    HealthStatus status;
    try {
      status = health.health();
    } catch (RuntimeException e) {
      sendStatus(exchange, GrpcErrors.toStatus(e));
      return;
    }
    if (!status.healthy()) {
      String message = status.message().isEmpty() ? ProtoMapping.UNHEALTHY : status.message();
      sendStatus(exchange, Status.UNAVAILABLE.withDescription(message));
      return;
    }
    sendMessage(exchange, ProtoMapping.toProto(status));
  }

  private void liveCheck(HttpExchange exchange) throws IOException {
    sendMessage(exchange, LiveCheckResp.getDefaultInstance());
  }

  private static void sendMessage(HttpExchange exchange, MessageOrBuilder message)
      throws IOException {
    HttpResponses.sendJson(exchange, 200, PRINTER.print(message));
  }

  private static void sendStatus(HttpExchange exchange, Status status) throws IOException {
    String message =
        status.getDescription() == null ? status.getCode().name() : status.getDescription();
    HttpResponses.sendError(
        exchange, GrpcHttpStatus.of(status.getCode()), status.getCode().value(), message);
  }
}
