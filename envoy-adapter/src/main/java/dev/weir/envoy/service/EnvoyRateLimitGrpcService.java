package dev.weir.envoy.service;

import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.CompletableFuture;

/**
 * {@code envoy.service.ratelimit.v3.RateLimitService} over gRPC, answered by a {@link
 * ShouldRateLimitHandler}: on the calling thread when the handler's answer is already complete.
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
    CompletableFuture<RateLimitResponse> answer = handler.decide(request);
    if (answer.isDone() && !answer.isCompletedExceptionally()) {
      responseObserver.onNext(answer.join());
      responseObserver.onCompleted();
      return;
    }
    answer.whenComplete(
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
