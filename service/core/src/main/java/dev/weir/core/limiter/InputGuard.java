package dev.weir.core.limiter;

import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * A {@link RateLimitService} for native clients that answers items with an over-long {@code name}
 * or {@code unique_key} with a per-item error (and counts the refusal) instead of creating a bucket
 * for them; the other items of the call go on to the wrapped service, in order.
 */
public final class InputGuard implements RateLimitService {

  private final RateLimitService delegate;
  private final InputLimits limits;
  private final WeirMetrics metrics;

  /** Creates the guard in front of {@code delegate}. */
  public InputGuard(RateLimitService delegate, InputLimits limits, WeirMetrics metrics) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    this.limits = Objects.requireNonNull(limits, "limits");
    this.metrics = Objects.requireNonNull(metrics, "metrics");
  }

  @Override
  public CompletableFuture<List<RateLimitResponse>> check(List<RateLimitRequest> requests) {
    if (requests.size() > MAX_BATCH_SIZE) {
      return delegate.check(requests);
    }
    String[] errors = null;
    List<RateLimitRequest> accepted = requests;
    for (int i = 0; i < requests.size(); i++) {
      String error = limits.checkItem(requests.get(i)).orElse(null);
      if (error != null) {
        if (errors == null) {
          errors = new String[requests.size()];
          accepted = new ArrayList<>(requests.subList(0, i));
        }
        errors[i] = error;
        metrics.refused(RefusalReason.FIELD_TOO_LONG);
      } else if (errors != null) {
        accepted.add(requests.get(i));
      }
    }
    if (errors == null) {
      return delegate.check(requests);
    }
    String[] itemErrors = errors;
    return delegate.check(accepted).thenApply(answers -> merge(itemErrors, answers));
  }

  private static List<RateLimitResponse> merge(String[] errors, List<RateLimitResponse> answers) {
    List<RateLimitResponse> merged = new ArrayList<>(errors.length);
    int next = 0;
    for (String error : errors) {
      merged.add(error != null ? RateLimitResponse.error(error) : answers.get(next++));
    }
    return merged;
  }

}
