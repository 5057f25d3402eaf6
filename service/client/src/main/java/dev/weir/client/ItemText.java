package dev.weir.client;

import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;

/**
 * The check that the fields naming a request's bucket can be sent as written: a Java string
 * holding a surrogate that is not half of a high-low pair has no UTF-8 form, and protobuf sends it
 * as {@code ?}, so a key ending in a lone U+D800 would be counted in the bucket of the same key
 * ending in {@code ?}. A request that fails it is answered with its error without being sent, as a
 * node answers a bad item.
 */
final class ItemText {

  /** The longest value quoted whole in an error; a longer one is cut, with {@code ...}. */
  private static final int MAX_QUOTED = 64;

  private ItemText() {}

  /**
   * Returns the answer to {@code request} when its {@code name} or {@code unique_key}, which make
   * its bucket's key, holds an unpaired surrogate: its {@code error} names the field, the value and
   * where the surrogate is; null when both can be sent.
   */
  static RateLimitResp refusal(RateLimitReq request) {
    String error = check("name", request.getName());
    if (error == null) {
      error = check("unique_key", request.getUniqueKey());
    }
    return error == null ? null : RateLimitResp.newBuilder().setError(error).build();
  }

  private static String check(String field, String text) {
    int at = unpairedSurrogate(text);
    if (at < 0) {
      return null;
    }
    return "field '"
        + field
        + "' is \""
        + quoted(text)
        + "\"; it must be valid UTF-16 text, each surrogate paired (\\uD800-\\uDBFF directly"
        + " followed by \\uDC00-\\uDFFF): the "
        + escaped(text.charAt(at))
        + " at index "
        + at
        + " is unpaired, and protobuf would send it as '?'";
  }

  /** Returns the index of the first surrogate of {@code text} not in a high-low pair, or -1. */
  static int unpairedSurrogate(String text) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (!Character.isSurrogate(c)) {
        continue;
      }
      if (Character.isHighSurrogate(c)
          && i + 1 < text.length()
          && Character.isLowSurrogate(text.charAt(i + 1))) {
        i++;
        continue;
      }
      return i;
    }
    return -1;
  }

  /**
   * Returns {@code text}, cut after {@value #MAX_QUOTED} characters, with every surrogate and
   * control character written as a {@code \\uXXXX} escape, so that the error is plain text.
   */
  private static String quoted(String text) {
    int end = Math.min(text.length(), MAX_QUOTED);
    StringBuilder out = new StringBuilder(end + 8);
    for (int i = 0; i < end; i++) {
      char c = text.charAt(i);
      out.append(Character.isSurrogate(c) || Character.isISOControl(c) ? escaped(c) : c);
    }
    return end < text.length() ? out.append("...").toString() : out.toString();
  }

  private static String escaped(char c) {
    return String.format("\\u%04x", (int) c);
  }
}
