package dev.weir.gubernator;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import java.util.List;

/**
 * The tracing of a native {@code GetRateLimits} call's answer (over gRPC or the HTTP/JSON
 * gateway): the names of the items answered over their limit, recorded on the call's span. {@link
 * #NONE} records nothing and allocates nothing; the composition root supplies a real one when
 * tracing is on. It records rate-limit names, never a key.
 */
public interface NativeTracing {

  /** The tracing of a node with tracing off: every call is {@link Call#NONE}. */
  NativeTracing NONE = () -> Call.NONE;

  /**
   * Starts the tracing of a call's answer on the calling thread's current span; {@link Call#NONE}
   * when that span records nothing.
   */
  Call start();

  /** A call being traced. */
  interface Call {

    /** The call of a node with tracing off, or whose span is not sampled: records nothing. */
    Call NONE = (items, answers) -> {};

    /** Records {@code answers}, the core's answers to {@code items} in the same order. */
    void answered(List<RateLimitRequest> items, List<RateLimitResponse> answers);
  }
}
