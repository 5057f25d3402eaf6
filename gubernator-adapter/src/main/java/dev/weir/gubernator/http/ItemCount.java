package dev.weir.gubernator.http;

import com.google.gson.Strictness;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonToken;
import dev.weir.core.limiter.RateLimitService;
import java.io.IOException;
import java.io.StringReader;

/**
 * The check that a protojson {@code GetRateLimitsReq} body carries no more items than one call may,
 * made without reading the items: Gson's streaming reader skips through the body as standard JSON
 * (RFC 8259), counting the elements of each top-level {@code requests} array, and stops at the
 * first element over {@link RateLimitService#MAX_BATCH_SIZE}. A body that is not standard JSON is
 * left to the check that refuses it as malformed.
 */
final class ItemCount {

  private static final String REQUESTS = "requests";

  private ItemCount() {}

  /**
   * Returns whether a top-level {@code requests} array of {@code json} (any of them, when the key
   * repeats) has more than {@link RateLimitService#MAX_BATCH_SIZE} elements; false for a body that
   * is not a JSON object or is malformed before such an element, whose fault the parser reports.
   */
  static boolean overBatch(String json) {
    if (!enoughSeparators(json)) {
      return false;
    }
    JsonReader in = new JsonReader(new StringReader(json));
    in.setStrictness(Strictness.STRICT);
    try {
      if (in.peek() != JsonToken.BEGIN_OBJECT) {
        return false;
      }
      in.beginObject();
      while (in.hasNext()) {
        if (in.nextName().equals(REQUESTS) && in.peek() == JsonToken.BEGIN_ARRAY) {
          if (overBatch(in)) {
            return true;
          }
        } else {
          in.skipValue();
        }
      }
    } catch (IOException malformed) {
      // The parser names the fault.
    }
    return false;
  }

  private static boolean overBatch(JsonReader in) throws IOException {
    in.beginArray();
    for (int n = 0; in.hasNext(); n++) {
      if (n == RateLimitService.MAX_BATCH_SIZE) {
        return true;
      }
      in.skipValue();
    }
    in.endArray();
    return false;
  }

  /**
   * Returns whether {@code json} has as many commas as an array of {@code MAX_BATCH_SIZE + 1}
   * elements needs between them.
   */
  private static boolean enoughSeparators(String json) {
    int separators = 0;
    for (int i = 0; i < json.length(); i++) {
      if (json.charAt(i) == ',' && ++separators == RateLimitService.MAX_BATCH_SIZE) {
        return true;
      }
    }
    return false;
  }
}
