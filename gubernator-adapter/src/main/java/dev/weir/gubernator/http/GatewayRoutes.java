package dev.weir.gubernator.http;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageOrBuilder;
import com.google.protobuf.util.JsonFormat;
import dev.weir.core.health.HealthStatus;
import dev.weir.core.health.NodeHealth;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.limiter.RequestTooLargeException;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.gubernator.GrpcErrors;
import dev.weir.gubernator.NativeCheck;
import dev.weir.gubernator.ProtoMapping;
import dev.weir.http.HttpAnswer;
import dev.weir.http.HttpCall;
import dev.weir.http.HttpRoute;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.LiveCheckResp;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletionStage;

/**
 * Gubernator's HTTP/JSON gateway as {@link HttpRoute}s: {@code POST /v1/GetRateLimits}, {@code GET
 * /v1/HealthCheck} and {@code GET /v1/LiveCheck}, speaking protojson as grpc-gateway does.
 *
 * <p>Requests accept both field name styles, enums by name or number, int64 as strings or numbers,
 * and ignore unknown fields; an empty body is an empty request. A value of a JSON type its field
 * does not take is refused with 400 naming the field, as grpc-gateway refuses it; unlike
 * grpc-gateway, so is an enum name the enum does not declare ({@link RequestParser}). A body with more items
 * than one call may carry is refused before any of them is parsed. Responses use proto field
 * names ({@code reset_time}), emit unpopulated fields and write int64 as strings. Errors are {@code
 * {"code":N,"message":"...","details":[]}} with grpc-gateway's HTTP status for the gRPC code. The
 * listener caps the body ({@code WEIR_HTTP_MAX_BODY_SIZE}); {@code GetRateLimits} is answered when
 * the service's future completes, without holding a thread meanwhile.
 */
public final class GatewayRoutes {

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

  private CompletionStage<HttpAnswer> getRateLimits(HttpCall call) {
    GetRateLimitsReq request;
    try {
      request = RequestParser.parse(new String(call.body(), StandardCharsets.UTF_8));
    } catch (RequestTooLargeException tooMany) {
      return answer(check.refuseTooManyItems());
    } catch (InvalidProtocolBufferException | RuntimeException e) {
      return HttpAnswer.error(
              400, Status.Code.INVALID_ARGUMENT.value(), String.valueOf(e.getMessage()))
          .completed();
    }
    CompletionStage<GetRateLimitsResp> response;
    try {
      response = check.decide(request);
    } catch (RuntimeException e) {
      return status(GrpcErrors.toStatus(e)).completed();
    }
    return answer(response);
  }

  private static CompletionStage<HttpAnswer> answer(CompletionStage<GetRateLimitsResp> response) {
    return response.handle(
        (answered, failure) ->
            failure != null ? status(GrpcErrors.toStatus(failure)) : message(answered));
  }

  private CompletionStage<HttpAnswer> healthCheck(HttpCall call) {
    HealthStatus status;
    try {
      status = health.health();
    } catch (RuntimeException e) {
      return status(GrpcErrors.toStatus(e)).completed();
    }
    if (!status.healthy()) {
      String message = status.message().isEmpty() ? ProtoMapping.UNHEALTHY : status.message();
      return status(Status.UNAVAILABLE.withDescription(message)).completed();
    }
    return message(ProtoMapping.toProto(status)).completed();
  }

  private CompletionStage<HttpAnswer> liveCheck(HttpCall call) {
    return message(LiveCheckResp.getDefaultInstance()).completed();
  }

  private static HttpAnswer message(MessageOrBuilder message) {
    try {
      return HttpAnswer.json(200, PRINTER.print(message));
    } catch (InvalidProtocolBufferException e) {
      return status(Status.INTERNAL.withDescription("cannot print answer: " + e.getMessage()));
    }
  }

  private static HttpAnswer status(Status status) {
    String message =
        status.getDescription() == null ? status.getCode().name() : status.getDescription();
    return HttpAnswer.error(GrpcHttpStatus.of(status.getCode()), status.getCode().value(), message);
  }
}
