package dev.weir.core.tracing;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link ClusterTracing} that never throws: when the tracing it wraps fails, the span concerned
 * is dropped (its items go on untraced) and the failure is logged, so that a tracer's bug never
 * withholds, changes or fails an answer. The first failure is logged at {@code WARN} with its
 * stack trace, later ones at {@code DEBUG}.
 */
public final class GuardedTracing implements ClusterTracing {

  private static final Logger LOG = LoggerFactory.getLogger(GuardedTracing.class);

  private final ClusterTracing traced;
  private final AtomicBoolean warned = new AtomicBoolean();

  private GuardedTracing(ClusterTracing traced) {
    this.traced = traced;
  }

  /** Returns {@code tracing} guarded; {@link ClusterTracing#NONE} and guarded ones as they are. */
  public static ClusterTracing of(ClusterTracing tracing) {
    if (tracing == NONE || tracing instanceof GuardedTracing) {
      return tracing;
    }
    return new GuardedTracing(tracing);
  }

  @Override
  public Forward forward(String owner, List<RateLimitRequest> items) {
    try {
      Forward forward = traced.forward(owner, items);
      return forward == null || forward == Forward.NONE ? Forward.NONE : new GuardedForward(forward);
    } catch (RuntimeException e) {
      failed("starting a forward span", e);
      return Forward.NONE;
    }
  }

  @Override
  public Span batch(String peer, List<RateLimitRequest> items) {
    try {
      return guarded(traced.batch(peer, items));
    } catch (RuntimeException e) {
      failed("starting a batch span", e);
      return Span.NONE;
    }
  }

  @Override
  public Span decide(RateLimitRequest item) {
    try {
      return guarded(traced.decide(item));
    } catch (RuntimeException e) {
      failed("starting a decision span", e);
      return Span.NONE;
    }
  }

  private Span guarded(Span span) {
    if (span == null || span == Span.NONE) {
      return Span.NONE;
    }
    return answer -> {
      try {
        span.end(answer);
      } catch (RuntimeException e) {
        failed("ending a span", e);
      }
    };
  }

  private void failed(String what, RuntimeException e) {
    if (warned.compareAndSet(false, true)) {
      LOG.warn("tracing failed {}; the span is dropped and the items go on untraced", what, e);
    } else {
      LOG.debug("tracing failed {}; the span is dropped", what, e);
    }
  }

  /** A forward span whose failures drop the trace context or the span's end, never an item. */
  private final class GuardedForward implements Forward {
    private final Forward forward;

    GuardedForward(Forward forward) {
      this.forward = forward;
    }

    @Override
    public List<RateLimitRequest> items(List<RateLimitRequest> items) {
      try {
        List<RateLimitRequest> traced = forward.items(items);
        if (traced != null && traced.size() == items.size()) {
          return traced;
        }
        failed(
            "adding the trace context",
            new IllegalStateException(
                "it returned " + (traced == null ? "no list" : traced.size() + " items")
                    + " for " + items.size()));
      } catch (RuntimeException e) {
        failed("adding the trace context", e);
      }
      return items;
    }

    @Override
    public void answered(RateLimitResponse answer) {
      try {
        forward.answered(answer);
      } catch (RuntimeException e) {
        failed("recording an answer", e);
      }
    }
  }
}
