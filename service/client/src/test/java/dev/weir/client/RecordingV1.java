package dev.weir.client;

import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.HealthCheckReq;
import dev.weir.proto.gubernator.HealthCheckResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.Status;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;

/**
 * A {@code V1} server that records each {@code GetRateLimits} call's size and answers every item
 * with {@code remaining = limit - hits} and its {@code unique_key} in metadata, unless told to
 * answer otherwise ({@link #failWith} fails every call, health checks included).
 */
final class RecordingV1 extends V1Grpc.V1ImplBase {

  private final List<Integer> callSizes = new CopyOnWriteArrayList<>();
  private volatile Function<GetRateLimitsReq, io.grpc.Status> failure = req -> null;
  private volatile boolean dropOneResponse;
  private volatile boolean neverAnswer;
  private final String name;

  RecordingV1(String name) {
    this.name = name;
  }

  @Override
  public void getRateLimits(GetRateLimitsReq request, StreamObserver<GetRateLimitsResp> out) {
    callSizes.add(request.getRequestsCount());
    if (neverAnswer) {
      return;
    }
    io.grpc.Status status = failure.apply(request);
    if (status != null) {
      out.onError(status.asRuntimeException());
      return;
    }
    GetRateLimitsResp.Builder resp = GetRateLimitsResp.newBuilder();
    List<RateLimitReq> items = request.getRequestsList();
    for (int i = 0; i < items.size() - (dropOneResponse ? 1 : 0); i++) {
      RateLimitReq item = items.get(i);
      resp.addResponses(
          RateLimitResp.newBuilder()
              .setStatus(Status.UNDER_LIMIT)
              .setLimit(item.getLimit())
              .setRemaining(item.getLimit() - item.getHits())
              .putMetadata("key", item.getUniqueKey())
              .putMetadata("server", name));
    }
    out.onNext(resp.build());
    out.onCompleted();
  }

  @Override
  public void healthCheck(HealthCheckReq request, StreamObserver<HealthCheckResp> out) {
    io.grpc.Status status = failure.apply(null);
    if (status != null) {
      out.onError(status.asRuntimeException());
      return;
    }
    out.onNext(
        HealthCheckResp.newBuilder()
            .setStatus("healthy")
            .setPeerCount(1)
            .setAdvertiseAddress(name)
            .build());
    out.onCompleted();
  }

  /** Returns the number of items of each call received so far, in order. */
  List<Integer> callSizes() {
    return List.copyOf(callSizes);
  }

  void failWith(io.grpc.Status status) {
    this.failure = req -> status;
  }

  void dropOneResponse() {
    this.dropOneResponse = true;
  }

  void neverAnswer() {
    this.neverAnswer = true;
  }
}
