package dev.weir.core.metrics;

import dev.weir.core.concurrent.Completions;
import dev.weir.core.limiter.RequestTooLargeException;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The counting a front door does around each rate-limit call: the calls in flight, each item's
 * result (under limit, over limit, error) and calls refused for carrying too many items. Shared by
 * every front door of a node, so Gubernator and Envoy clients are counted alike.
 */
public final class CheckMeter {

  /** A meter that counts nothing. */
  public static final CheckMeter NOOP = new CheckMeter(WeirMetrics.NOOP);

  private final WeirMetrics metrics;
  private final AtomicLong inFlight = new AtomicLong();

  /** Creates the meter reporting to {@code metrics}, which reads the calls in flight when scraped. */
  public CheckMeter(WeirMetrics metrics) {
    this.metrics = Objects.requireNonNull(metrics, "metrics");
    metrics.watchChecksInFlight(inFlight::get);
  }

  /** Notes that a call started. */
  public void started() {
    inFlight.incrementAndGet();
  }

  /** Notes that a started call was answered with {@code responses}. */
  public void answered(List<RateLimitResponse> responses) {
    inFlight.decrementAndGet();
    for (int i = 0; i < responses.size(); i++) {
      metrics.checked(resultOf(responses.get(i)));
    }
  }

  /**
   * Notes that a started call was answered with {@code responses} to {@code items} (in the same
   * order), counting an over-limit answer to an item whose {@code hits} is not positive (a query or
   * a refund, which refuses nothing) as under the limit.
   */
  public void answered(List<RateLimitRequest> items, List<RateLimitResponse> responses) {
    inFlight.decrementAndGet();
    for (int i = 0; i < responses.size(); i++) {
      CheckResult result = resultOf(responses.get(i));
      if (result == CheckResult.OVER_LIMIT && items.get(i).hits() <= 0) {
        result = CheckResult.UNDER_LIMIT;
      }
      metrics.checked(result);
    }
  }

  /**
   * Counts {@code items} items of an answered call that were answered with an error of their own
   * without reaching the core (a field over the input limits), as results {@code error}.
   */
  public void answeredWithError(int items) {
    for (int i = 0; i < items; i++) {
      metrics.checked(CheckResult.ERROR);
    }
  }

  /** Notes that a started call failed with {@code failure}. */
  public void failed(Throwable failure) {
    inFlight.decrementAndGet();
    Throwable cause = Completions.cause(failure);
    if (cause instanceof RequestTooLargeException) {
      metrics.refused(RefusalReason.TOO_MANY_ITEMS);
    }
  }

  /** Counts one refusal for {@code reason}. */
  public void refused(RefusalReason reason) {
    metrics.refused(reason);
  }

  private static CheckResult resultOf(RateLimitResponse response) {
    if (response.isError()) {
      return CheckResult.ERROR;
    }
    return response.status() == Status.OVER_LIMIT ? CheckResult.OVER_LIMIT : CheckResult.UNDER_LIMIT;
  }
}
