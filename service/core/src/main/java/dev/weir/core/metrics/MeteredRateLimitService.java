package dev.weir.core.metrics;

import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.limiter.RequestTooLargeException;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link RateLimitService} that reports what passes through it: each item's result (under limit,
 * over limit, error), calls refused for too many items, and the calls in flight. Wraps the service
 * every front door uses, so Gubernator and Envoy clients are counted alike.
 */
public final class MeteredRateLimitService implements RateLimitService {

  private final RateLimitService delegate;
  private final WeirMetrics metrics;
  private final AtomicLong inFlight = new AtomicLong();

  /** Creates the wrapper around {@code delegate}, reporting to {@code metrics}. */
  public MeteredRateLimitService(RateLimitService delegate, WeirMetrics metrics) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    this.metrics = Objects.requireNonNull(metrics, "metrics");
    metrics.watchChecksInFlight(inFlight::get);
  }

  @Override
  public CompletableFuture<List<RateLimitResponse>> check(List<RateLimitRequest> requests) {
    inFlight.incrementAndGet();
    CompletableFuture<List<RateLimitResponse>> answer;
    try {
      answer = delegate.check(requests);
    } catch (RuntimeException e) {
      inFlight.decrementAndGet();
      record(e);
      throw e;
    }
    return answer.whenComplete(
        (responses, failure) -> {
          inFlight.decrementAndGet();
          if (failure != null) {
            record(failure);
            return;
          }
          for (RateLimitResponse response : responses) {
            metrics.checked(resultOf(response));
          }
        });
  }

  private void record(Throwable failure) {
    Throwable cause = failure instanceof CompletionException c && c.getCause() != null
        ? c.getCause()
        : failure;
    if (cause instanceof RequestTooLargeException) {
      metrics.refused(RefusalReason.TOO_MANY_ITEMS);
    }
  }

  private static CheckResult resultOf(RateLimitResponse response) {
    if (!response.error().isEmpty()) {
      return CheckResult.ERROR;
    }
    return response.status() == Status.OVER_LIMIT ? CheckResult.OVER_LIMIT : CheckResult.UNDER_LIMIT;
  }


  /** Returns the wrapped service. */
  public RateLimitService delegate() {
    return delegate;
  }
}
