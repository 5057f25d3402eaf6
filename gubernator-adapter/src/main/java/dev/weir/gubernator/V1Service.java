package dev.weir.gubernator;

import dev.weir.core.health.HealthStatus;
import dev.weir.core.health.NodeHealth;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.HealthCheckReq;
import dev.weir.proto.gubernator.HealthCheckResp;
import dev.weir.proto.gubernator.LiveCheckReq;
import dev.weir.proto.gubernator.LiveCheckResp;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * Gubernator's public gRPC service {@code pb.gubernator.V1}: rate limits from a {@link
 * RateLimitService}, {@code HealthCheck} from a {@link NodeHealth}. An
 * unhealthy node answers {@code HealthCheck} with {@code UNAVAILABLE} (gubernator-io 2.12+), so
 * readiness probes can rely on the status code.
 */
public final class V1Service extends V1Grpc.V1ImplBase {

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

  @Override
  public void getRateLimits(GetRateLimitsReq request, StreamObserver<GetRateLimitsResp> observer) {
    CompletableFuture<GetRateLimitsResp> answer;
    try {
      answer = check.check(request);
    } catch (RuntimeException e) {
      observer.onError(GrpcErrors.toStatus(e).asRuntimeException());
      return;
    }
    if (answer.isDone() && !answer.isCompletedExceptionally()) {
      observer.onNext(answer.join());
      observer.onCompleted();
      return;
    }
    answer.whenComplete(
        (response, failure) -> {
          if (failure != null) {
            observer.onError(GrpcErrors.toStatus(failure).asRuntimeException());
          } else {
            observer.onNext(response);
            observer.onCompleted();
          }
        });
  }

  @Override
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

  @Override
  public void liveCheck(LiveCheckReq request, StreamObserver<LiveCheckResp> observer) {
    observer.onNext(LiveCheckResp.getDefaultInstance());
    observer.onCompleted();
  }
}
