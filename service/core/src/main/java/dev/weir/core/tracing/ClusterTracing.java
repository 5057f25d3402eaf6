package dev.weir.core.tracing;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import java.util.List;

/**
 * The spans of the cluster's request path: the forward of a call's items to their owner, each
 * batch sent to a peer, and the owner's decision of each forwarded item. {@link #NONE} records
 * nothing and allocates nothing; the composition root supplies a real one when tracing is on.
 *
 * <p>The trace context travels with each forwarded item, in its {@code metadata} (as Gubernator's
 * peers carry it), because batches share one long-lived peer stream whose headers are sent once.
 * Spans never record a key's value: only names, counts, owners and outcomes.
 */
public interface ClusterTracing {

  /** The tracing of a node with tracing off: every span is {@link Span#NONE}. */
  ClusterTracing NONE =
      new ClusterTracing() {
        @Override
        public Forward forward(String owner, List<RateLimitRequest> items) {
          return Forward.NONE;
        }

        @Override
        public Span batch(String peer, List<RateLimitRequest> items) {
          return Span.NONE;
        }

        @Override
        public Span decide(RateLimitRequest item) {
          return Span.NONE;
        }
      };

  /**
   * Starts the span of {@code items} forwarded to {@code owner}, a child of the calling thread's
   * current span; called on the thread that decided to forward them.
   */
  Forward forward(String owner, List<RateLimitRequest> items);

  /**
   * Starts the span of one batch of {@code items} sent to {@code peer}, linked to the forward span
   * each item carries.
   */
  Span batch(String peer, List<RateLimitRequest> items);

  /** Starts the span of the owner's decision of {@code item}, a child of the context it carries. */
  Span decide(RateLimitRequest item);

  /** A started span that ends with its answers. */
  interface Span {

    /** The span of a node with tracing off: ends without recording anything. */
    Span NONE = answer -> {};

    /**
     * Records {@code answer}'s outcome and ends the span; a batch span ends with null when the peer
     * answered the batch, or with an error answer naming why it failed.
     */
    void end(RateLimitResponse answer);
  }

  /** The span of one forward: the items as sent, carrying its context, and their answers. */
  interface Forward {

    /** The forward of a node with tracing off: its items go as they are. */
    Forward NONE =
        new Forward() {
          @Override
          public List<RateLimitRequest> items(List<RateLimitRequest> items) {
            return items;
          }

          @Override
          public void answered(RateLimitResponse answer) {}
        };

    /** Returns {@code items} as they are sent: each carrying this span's context. */
    List<RateLimitRequest> items(List<RateLimitRequest> items);

    /** Records one item's answer; the span ends with the last of its items' answers. */
    void answered(RateLimitResponse answer);
  }
}
