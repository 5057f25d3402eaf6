package dev.weir.server;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.gubernator.NativeTracing;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import java.util.List;

/**
 * {@link NativeTracing} with OpenTelemetry: the distinct names of a native call's items answered
 * over their limit (at most {@link OtelClusterTracing#MAX_NAMES}), recorded on the front-door span
 * current on the calling thread ({@code GetRateLimits} over gRPC or {@code POST
 * /v1/GetRateLimits}); nothing when none is over, or when that span records nothing.
 */
final class OtelNativeTracing implements NativeTracing {

  /** The names of the items answered over their limit, each once. */
  static final AttributeKey<List<String>> OVER_LIMIT_NAMES =
      AttributeKey.stringArrayKey("weir.over_limit_names");

  @Override
  public Call start() {
    Span span = Span.current();
    if (!span.isRecording()) {
      return Call.NONE;
    }
    return (items, answers) -> record(span, items, answers);
  }

  private static void record(
      Span span, List<RateLimitRequest> items, List<RateLimitResponse> answers) {
    CappedNames names = new CappedNames();
    for (int i = 0; i < answers.size(); i++) {
      RateLimitResponse answer = answers.get(i);
      if (!answer.isError() && answer.status() == Status.OVER_LIMIT) {
        names.add(items.get(i).name());
      }
    }
    if (!names.isEmpty()) {
      span.setAttribute(OVER_LIMIT_NAMES, names.toList());
    }
  }
}
