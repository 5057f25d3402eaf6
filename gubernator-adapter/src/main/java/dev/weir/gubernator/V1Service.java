package dev.weir.gubernator;

import dev.weir.core.grpc.Answers;
import dev.weir.core.health.HealthStatus;
import dev.weir.core.health.NodeHealth;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.proto.gubernator.HealthCheckReq;
import dev.weir.proto.gubernator.HealthCheckResp;
import dev.weir.proto.gubernator.LiveCheckReq;
import dev.weir.proto.gubernator.LiveCheckResp;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.BindableService;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * Gubernator's public gRPC service {@code pb.gubernator.V1}: rate limits from a {@link
 * RateLimitService}, {@code HealthCheck} from a {@link NodeHealth}. An
 * unhealthy node answers {@code HealthCheck} with {@code UNAVAILABLE} (gubernator-io 2.12+), so
 * readiness probes can rely on the status code. {@code GetRateLimits} is bound as {@link
 * V1Methods#GET_RATE_LIMITS}: the request arrives as core requests and the answers leave as they
 * are, without protobuf messages in between.
 */
public final class V1Service implements BindableService {

  private final NativeCheck check;
  private final NodeHealth health;

  /**
   * Creates the service answering from {@code service} with the default input limits and no
   * metering, reporting {@code health}.
   */
  public V1Service(RateLimitService service, NodeHealth health) {
    this(new NativeCheck(service, InputLimits.DEFAULTS, CheckMeter.NOOP), health);
  }

  /** Creates the service answering through {@code check}, reporting {@code health}. */
  public V1Service(NativeCheck check, NodeHealth health) {
    this.check = Objects.requireNonNull(check, "check");
    this.health = Objects.requireNonNull(health, "health");
  }

  /** Returns the service bound to {@link V1Methods#SERVICE}'s methods. */
  @Override
  public ServerServiceDefinition bindService() {
    return ServerServiceDefinition.builder(V1Methods.SERVICE)
        .addMethod(V1Methods.GET_RATE_LIMITS, ServerCalls.asyncUnaryCall(this::getRateLimits))
        .addMethod(V1Grpc.getHealthCheckMethod(), ServerCalls.asyncUnaryCall(this::healthCheck))
        .addMethod(V1Grpc.getLiveCheckMethod(), ServerCalls.asyncUnaryCall(this::liveCheck))
        .build();
  }

  /** Answers the items of one {@code GetRateLimits} call on {@code observer}. */
  public void getRateLimits(
      List<RateLimitRequest> items, StreamObserver<List<RateLimitResponse>> observer) {
    CompletableFuture<List<RateLimitResponse>> answer;
    try {
      answer = check.decide(items);
    } catch (RuntimeException e) {
      observer.onError(GrpcErrors.toStatus(e).asRuntimeException());
      return;
    }
    Answers.relay(
        answer, observer, failure -> GrpcErrors.toStatus(failure).asRuntimeException());
  }

  /** Answers {@code HealthCheck}: the node's health, or {@code UNAVAILABLE} when unhealthy. */
  public void healthCheck(HealthCheckReq request, StreamObserver<HealthCheckResp> observer) {
    HealthStatus status;
    try {
      status = health.health();
    } catch (RuntimeException e) {
      observer.onError(GrpcErrors.toStatus(e).asRuntimeException());
      return;
    }
    if (!status.healthy()) {
      String message = status.message().isEmpty() ? ProtoMapping.UNHEALTHY : status.message();
      observer.onError(Status.UNAVAILABLE.withDescription(message).asRuntimeException());
      return;
    }
    observer.onNext(ProtoMapping.toProto(status));
    observer.onCompleted();
  }

  /** Answers {@code LiveCheck}: always, while the process serves. */
  public void liveCheck(LiveCheckReq request, StreamObserver<LiveCheckResp> observer) {
    observer.onNext(LiveCheckResp.getDefaultInstance());
    observer.onCompleted();
  }
}
