package dev.weir.gubernator;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.toplimited.LimitedKey;
import dev.weir.core.toplimited.OverLimitRecorder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The {@code metadata} entries that say which limit refused a native item: {@value #NAME} (the
 * item's {@code name}), {@value #LIMIT} and {@value #DURATION} (the window in milliseconds, as the
 * request gave them), added to every {@code OVER_LIMIT} answer next to what the core put there
 * (such as {@code owner}). Answers under the limit are left as they are.
 */
public final class OverLimitMetadata {

  /** The key of the refused item's {@code name}. */
  public static final String NAME = "over_limit.name";

  /** The key of the refused item's {@code limit}. */
  public static final String LIMIT = "over_limit.limit";

  /** The key of the refused item's {@code duration} in milliseconds. */
  public static final String DURATION = "over_limit.duration";

  private OverLimitMetadata() {}

  /**
   * Returns {@code answers} to {@code items} (in the same order) with the entries added to each
   * over-limit answer, each of which is reported to {@code recorder}: {@code answers} itself when
   * none is over the limit.
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
      recorder.overLimit(LimitedKey.ofNative(item.name(), item.uniqueKey()), item.hits());
    }
    return out == null ? answers : out;
  }

  private static RateLimitResponse annotate(RateLimitRequest item, RateLimitResponse answer) {
    Map<String, String> metadata = new HashMap<>(answer.metadata());
    metadata.put(NAME, item.name());
    metadata.put(LIMIT, Long.toString(item.limit()));
    metadata.put(DURATION, Long.toString(item.duration()));
    return answer.withMetadata(metadata);
  }
}
