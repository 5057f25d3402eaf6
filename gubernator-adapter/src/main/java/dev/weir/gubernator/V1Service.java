package dev.weir.gubernator;

import dev.weir.core.limiter.HealthStatus;
import dev.weir.core.limiter.RateLimitService;
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

/**
 * Gubernator's public gRPC service {@code pb.gubernator.V1} over a {@link RateLimitService}. An
 * unhealthy node answers {@code HealthCheck} with {@code UNAVAILABLE} (gubernator-io 2.12+), so
 * readiness probes can rely on the status code.
 */
public final class V1Service extends V1Grpc.V1ImplBase {

  private final RateLimitService service;

  /** Creates the service answering from {@code service}. */
  public V1Service(RateLimitService service) {
    this.service = Objects.requireNonNull(service, "service");
  }

  @Override
  public void getRateLimits(GetRateLimitsReq request, StreamObserver<GetRateLimitsResp> observer) {
    try {
      service
          .check(ProtoMapping.toModel(request))
          .whenComplete(
              (responses, failure) -> {
                if (failure != null) {
                  observer.onError(GrpcErrors.toStatus(failure).asRuntimeException());
                } else {
                  observer.onNext(ProtoMapping.toProto(responses));
                  observer.onCompleted();
                }
              });
    } catch (RuntimeException e) {
      observer.onError(GrpcErrors.toStatus(e).asRuntimeException());
    }
  }

  @Override
  public void healthCheck(HealthCheckReq request, StreamObserver<HealthCheckResp> observer) {
    HealthStatus health;
    try {
      health = service.health();
    } catch (RuntimeException e) {
      observer.onError(GrpcErrors.toStatus(e).asRuntimeException());
      return;
    }
    if (!health.healthy()) {
      String message = health.message().isEmpty() ? ProtoMapping.UNHEALTHY : health.message();
      observer.onError(Status.UNAVAILABLE.withDescription(message).asRuntimeException());
      return;
    }
    observer.onNext(ProtoMapping.toProto(health));
    observer.onCompleted();
  }

  @Override
  public void liveCheck(LiveCheckReq request, StreamObserver<LiveCheckResp> observer) {
    observer.onNext(LiveCheckResp.getDefaultInstance());
    observer.onCompleted();
  }
}
