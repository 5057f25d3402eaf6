package dev.weir.envoy.service;

import dev.weir.core.engine.GregorianCalendarMath;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.GregorianInterval;
import dev.weir.core.model.RateLimitRequest;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus;
import java.nio.charset.StandardCharsets;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The {@code RateLimit-Policy} and {@code RateLimit} structured fields of
 * draft-ietf-httpapi-ratelimit-headers-10 (RFC 9651 Lists), written from one answer's plans and
 * statuses.
 *
 * <p>{@code RateLimit-Policy} lists every policy of every counted descriptor once, as {@code
 * "name";q=<quota>;w=<window seconds>}; {@code RateLimit} names the deciding policy of the status
 * the RateLimit-* trio would be taken from, as {@code "name";r=<remaining>;t=<seconds to reset>}.
 */
final class IetfRateLimitFields {

  /** The name of the field listing the policies. */
  static final String POLICY_FIELD = "RateLimit-Policy";

  /** The name of the field giving the deciding policy's remaining quota and reset. */
  static final String LIMIT_FIELD = "RateLimit";

  /** The largest sf-integer (RFC 9651 section 3.3.1). */
  static final long MAX_INTEGER = 999_999_999_999_999L;

  private IetfRateLimitFields() {}

  /**
   * Adds both fields to {@code response}: {@code plans} and {@code statuses} are the answer's,
   * {@code deciding} the deciding policy of each of its {@link DescriptorPlan.Limited} plans, and
   * {@code chosen} the index of the status the fields report (negative when none has
   * a limit, and then neither field is added).
   */
  static void add(
      RateLimitResponse.Builder response,
      List<DescriptorPlan> plans,
      DecidingPolicies deciding,
      List<DescriptorStatus> statuses,
      int chosen) {
    if (chosen < 0) {
      return;
    }
    Set<String> policies = new LinkedHashSet<>();
    DescriptorPlan.Policy chosenPolicy = null;
    for (int i = 0; i < plans.size(); i++) {
      if (!(plans.get(i) instanceof DescriptorPlan.Limited limited)) {
        continue;
      }
      for (DescriptorPlan.Policy policy : limited.policies()) {
        policies.add(policyMember(policy));
      }
      if (i == chosen) {
        chosenPolicy = deciding.policy(i);
      }
    }
    if (chosenPolicy == null) {
      return;
    }
    DescriptorStatus status = statuses.get(chosen);
    StringBuilder limit = string(new StringBuilder(), chosenPolicy.policyName());
    limit.append(";r=").append(Integer.toUnsignedLong(status.getLimitRemaining()));
    limit.append(";t=").append(clamp(status.getDurationUntilReset().getSeconds()));
    response
        .addResponseHeadersToAdd(header(POLICY_FIELD, String.join(", ", policies)))
        .addResponseHeadersToAdd(header(LIMIT_FIELD, limit.toString()));
  }

  /** Returns the List member of {@code policy}: its name, quota and window in seconds. */
  static String policyMember(DescriptorPlan.Policy policy) {
    StringBuilder out = string(new StringBuilder(), policy.policyName());
    out.append(";q=").append(clamp(policy.requestsPerUnit()));
    out.append(";w=").append(clamp(ResponseBuilder.ceilSeconds(windowMillis(policy.request()))));
    return out.toString();
  }

  /**
   * Returns the window length of {@code request}: its duration, or for a calendar window the length
   * of the interval containing the request's time in its zone (a month of 28 to 31 days, a day of
   * 23 to 25 hours across a daylight-saving change).
   */
  private static long windowMillis(RateLimitRequest request) {
    if (!request.has(Behavior.DURATION_IS_GREGORIAN)) {
      return request.duration();
    }
    String zone = request.metadata().get(GregorianInterval.TIME_ZONE_METADATA);
    return new GregorianCalendarMath(zone == null ? ZoneOffset.UTC : ZoneId.of(zone))
        .length(GregorianInterval.forCode(request.duration()).orElseThrow(), request.createdAt());
  }

  /**
   * Appends {@code text} to {@code out} as an sf-string (RFC 9651 section 3.3.3): quoted, with
   * {@code "} and {@code \} escaped; characters outside printable ASCII, which an sf-string cannot
   * hold, and {@code %} itself are written as {@code %XX} of their UTF-8 bytes, so distinct names
   * stay distinct.
   */
  static StringBuilder string(StringBuilder out, String text) {
    out.append('"');
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c >= 0x20 && c < 0x7F && c != '%') {
        out.append(c);
      } else {
        int end = Character.isHighSurrogate(c) && i + 1 < text.length() ? i + 2 : i + 1;
        for (byte b : text.substring(i, end).getBytes(StandardCharsets.UTF_8)) {
          out.append('%').append(Character.toUpperCase(Character.forDigit((b >> 4) & 0xF, 16)));
          out.append(Character.toUpperCase(Character.forDigit(b & 0xF, 16)));
        }
        i = end - 1;
      }
    }
    return out.append('"');
  }

  private static long clamp(long value) {
    return Math.max(0, Math.min(value, MAX_INTEGER));
  }

  private static HeaderValue header(String key, String value) {
    return HeaderValue.newBuilder().setKey(key).setValue(value).build();
  }
}
