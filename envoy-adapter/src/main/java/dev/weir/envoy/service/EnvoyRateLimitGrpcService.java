package dev.weir.envoy.service;

import dev.weir.core.grpc.Answers;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;

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
    Answers.relay(
        handler.decide(request),
        responseObserver,
        failure -> Status.fromThrowable(failure).asRuntimeException());
  }
}
