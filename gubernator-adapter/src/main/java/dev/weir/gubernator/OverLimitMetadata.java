package dev.weir.gubernator;

import dev.weir.core.model.Behavior;
import dev.weir.core.model.GregorianInterval;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.toplimited.LimitedKey;
import dev.weir.core.toplimited.OverLimitRecorder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The {@code metadata} entries that say which limit refused a native item: {@value #NAME} (the
 * item's {@code name}), {@value #LIMIT} and {@value #DURATION} (as the request gave them: the window
 * in milliseconds, or a calendar interval's code, which {@value #GREGORIAN} then names), added to
 * every {@code OVER_LIMIT} answer next to what the core put there (such as {@code owner}). Answers
 * under the limit are left as they are.
 *
 * <p>Only over-limit answers to items that asked for hits are reported as limited: a query ({@code
 * hits} 0) or a refund (negative {@code hits}) of a bucket that stores {@code OVER_LIMIT} is
 * answered over the limit but refuses nothing, as Gubernator's over-limit counter leaves it out.
 */
public final class OverLimitMetadata {

  /** The key of the refused item's {@code name}. */
  public static final String NAME = "over_limit.name";

  /** The key of the refused item's {@code limit}. */
  public static final String LIMIT = "over_limit.limit";

  /** The key of the refused item's {@code duration} as the request gave it. */
  public static final String DURATION = "over_limit.duration";

  /**
   * The key of the calendar interval a {@code DURATION_IS_GREGORIAN} item's {@code duration} code
   * names, in lower case ({@code minutes}, {@code hours}, ... {@code years}).
   */
  public static final String GREGORIAN = "over_limit.gregorian";

  private OverLimitMetadata() {}

  /**
   * Returns {@code answers} to {@code items} (in the same order) with the entries added to each
   * over-limit answer, each of which is reported to {@code recorder} when its item's {@code hits}
   * is positive: {@code answers} itself when none is over the limit.
   */
  static List<RateLimitResponse> annotate(
      List<RateLimitRequest> items, List<RateLimitResponse> answers, OverLimitRecorder recorder) {
    List<RateLimitResponse> out = null;
    int n = answers.size();
    for (int i = 0; i < n; i++) {
      RateLimitResponse answer = answers.get(i);
      if (answer.status() != Status.OVER_LIMIT || answer.isError()) {
        continue;
      }
      if (out == null) {
        out = new ArrayList<>(answers);
      }
      RateLimitRequest item = items.get(i);
      out.set(i, annotate(item, answer));
      if (item.hits() > 0) {
        recorder.overLimit(LimitedKey.ofNative(item.name(), item.uniqueKey()), item.hits());
      }
    }
    return out == null ? answers : out;
  }

  private static RateLimitResponse annotate(RateLimitRequest item, RateLimitResponse answer) {
    Map<String, String> metadata = new HashMap<>(answer.metadata());
    metadata.put(NAME, item.name());
    metadata.put(LIMIT, Long.toString(item.limit()));
    metadata.put(DURATION, Long.toString(item.duration()));
    if (Behavior.has(item.behavior(), Behavior.DURATION_IS_GREGORIAN)) {
      GregorianInterval.forCode(item.duration())
          .ifPresent(interval -> metadata.put(GREGORIAN, interval.name().toLowerCase(Locale.ROOT)));
    }
    return answer.withMetadata(metadata);
  }
}
