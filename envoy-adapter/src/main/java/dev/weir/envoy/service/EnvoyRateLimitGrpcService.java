package dev.weir.envoy.service;

import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;

/**
 * {@code envoy.service.ratelimit.v3.RateLimitService} over gRPC, answered by a {@link
 * ShouldRateLimitHandler}.
 */
public final class EnvoyRateLimitGrpcService extends RateLimitServiceGrpc.RateLimitServiceImplBase {

  private final ShouldRateLimitHandler handler;

  /** Creates the service. */
  public EnvoyRateLimitGrpcService(ShouldRateLimitHandler handler) {
    this.handler = handler;
  }

  @Override
  public void shouldRateLimit(
      RateLimitRequest request, StreamObserver<RateLimitResponse> responseObserver) {
    handler
        .handle(request)
        .whenComplete(
            (response, failure) -> {
              if (failure != null) {
                responseObserver.onError(Status.fromThrowable(failure).asRuntimeException());
              } else {
                responseObserver.onNext(response);
                responseObserver.onCompleted();
              }
            });
  }
}
