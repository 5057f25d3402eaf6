package dev.weir.server;

import dev.weir.core.testkit.Await;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.BucketId;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaServiceGrpc;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaUsageReports;
import io.grpc.Channel;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;

/** An RLQS stream a test opens, recording what the server sends on it and how it ended. */
final class RlqsStream {

  /** The responses the server sent, in order. */
  final List<RateLimitQuotaResponse> responses = new CopyOnWriteArrayList<>();

  /** The error the stream ended with, or null while it is open. */
  final AtomicReference<Throwable> ended = new AtomicReference<>();

  private final StreamObserver<RateLimitQuotaUsageReports> reports;

  /** Opens a stream on {@code channel}. */
  RlqsStream(Channel channel) {
    this.reports =
        RateLimitQuotaServiceGrpc.newStub(channel)
            .streamRateLimitQuotas(
                new StreamObserver<>() {
                  @Override
                  public void onNext(RateLimitQuotaResponse value) {
                    responses.add(value);
                  }

                  @Override
                  public void onError(Throwable t) {
                    ended.set(t);
                  }

                  @Override
                  public void onCompleted() {}
                });
  }

  /**
   * Reports one request allowed in {@code bucket} of {@code domain} and waits (up to 10 s) for the
   * server's first response.
   */
  RateLimitQuotaResponse reportOneAllowed(String domain, BucketId bucket)
      throws InterruptedException {
    reports.onNext(
        RateLimitQuotaUsageReports.newBuilder()
            .setDomain(domain)
            .addBucketQuotaUsages(
                RateLimitQuotaUsageReports.BucketQuotaUsage.newBuilder()
                    .setBucketId(bucket)
                    .setNumRequestsAllowed(1))
            .build());
    Await.until(Duration.ofSeconds(10), () -> !responses.isEmpty(), "an RLQS answer");
    return responses.get(0);
  }

  /** Ends the stream from this side. */
  void close() {
    reports.onCompleted();
  }
}
