package dev.weir.core;

import dev.weir.core.health.HealthStatus;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A rate limiter backed by a Weir cluster: checks requests against their buckets wherever in the
 * cluster those live. A bad request is not an exception: its response carries the reason in {@link
 * RateLimitResponse#error()}. A future may complete on a gRPC transport thread (when an item went
 * to another member): continuations chained on it without an executor must not block, and no
 * gRPC event-loop thread may wait for a decision (an item forwarded from such a thread leaves at the
 * end of its round of work, which never comes while it waits).
 */
public interface RateLimiter extends AutoCloseable {

  /** Checks {@code request} and completes with its decision. */
  CompletableFuture<RateLimitResponse> decide(RateLimitRequest request);

  /** Checks every request and completes with their decisions in the same order. */
  CompletableFuture<List<RateLimitResponse>> decideAll(List<RateLimitRequest> requests);

  /** Returns this member's view of the cluster's health. */
  HealthStatus health();

  /** Hands this member's buckets to their next owners, leaves the cluster and stops. */
  @Override
  void close();
}
