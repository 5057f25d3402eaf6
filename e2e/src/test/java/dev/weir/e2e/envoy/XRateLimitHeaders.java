package dev.weir.e2e.envoy;

import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The {@code x-ratelimit-*} headers Envoy's rate-limit filter derives from a {@code
 * ShouldRateLimit} answer when {@code enable_x_ratelimit_headers: DRAFT_VERSION_03} is set (Envoy's
 * {@code ratelimit_headers.cc}).
 *
 * <p>Among the statuses carrying a {@code current_limit}, the first one with the smallest {@code
 * limit_remaining} gives {@code x-ratelimit-remaining}, {@code x-ratelimit-reset} (its {@code
 * duration_until_reset} in whole seconds) and the head of {@code x-ratelimit-limit}; the quota
 * policies of all of them follow as {@code , <limit>;w=<window seconds>[;name="<name>"]}. Units
 * without a window (WEEK in Envoy's table) are left out of the policy list. No status with a {@code
 * current_limit} means no headers.
 */
public final class XRateLimitHeaders {
  private XRateLimitHeaders() {}

  /** Returns the headers, keyed by lower-case name, in the order Envoy adds them. */
  public static Map<String, String> of(RateLimitResponse response) {
    DescriptorStatus tightest = null;
    StringBuilder policies = new StringBuilder();
    for (DescriptorStatus status : response.getStatusesList()) {
      if (!status.hasCurrentLimit()) {
        continue;
      }
      if (tightest == null || status.getLimitRemaining() < tightest.getLimitRemaining()) {
        tightest = status;
      }
      long window = windowSeconds(status.getCurrentLimit().getUnit());
      if (window > 0) {
        policies
            .append(", ")
            .append(status.getCurrentLimit().getRequestsPerUnit())
            .append(";w=")
            .append(window);
        if (!status.getCurrentLimit().getName().isEmpty()) {
          policies.append(";name=\"").append(status.getCurrentLimit().getName()).append('"');
        }
      }
    }
    Map<String, String> headers = new LinkedHashMap<>();
    if (tightest != null) {
      headers.put(
          "x-ratelimit-limit",
          tightest.getCurrentLimit().getRequestsPerUnit() + policies.toString());
      headers.put("x-ratelimit-remaining", Integer.toUnsignedString(tightest.getLimitRemaining()));
      headers.put(
          "x-ratelimit-reset", Long.toString(tightest.getDurationUntilReset().getSeconds()));
    }
    return headers;
  }

  /** Returns Envoy's window in seconds for a unit, 0 for a unit it has no window for. */
  static long windowSeconds(RateLimitResponse.RateLimit.Unit unit) {
    return switch (unit) {
      case SECOND -> 1;
      case MINUTE -> 60;
      case HOUR -> 3600;
      case DAY -> 86400;
      case MONTH -> 2592000;
      case YEAR -> 31536000;
      default -> 0;
    };
  }
}
