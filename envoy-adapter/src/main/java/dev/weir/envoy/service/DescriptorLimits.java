package dev.weir.envoy.service;

import dev.weir.core.limiter.InputLimits;
import dev.weir.core.metrics.RefusalReason;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import java.util.Optional;

/**
 * The size checks of an Envoy request, made before any descriptor is matched: entries per
 * descriptor and the length of each entry's key and value, against {@link InputLimits}.
 */
final class DescriptorLimits {

  /**
   * A refused request.
   *
   * @param reason what the metrics count it as
   * @param message the error Envoy receives, naming the descriptor, field, length and limit
   */
  record Refusal(RefusalReason reason, String message) {}

  private DescriptorLimits() {}

  /** Returns the first limit {@code request} exceeds, or empty. */
  static Optional<Refusal> check(RateLimitRequest request, InputLimits limits) {
    for (int d = 0; d < request.getDescriptorsCount(); d++) {
      RateLimitDescriptor descriptor = request.getDescriptors(d);
      if (descriptor.getEntriesCount() > limits.maxDescriptorEntries()) {
        return Optional.of(
            new Refusal(
                RefusalReason.TOO_MANY_ENTRIES,
                "descriptor "
                    + d
                    + " has "
                    + descriptor.getEntriesCount()
                    + " entries; at most "
                    + limits.maxDescriptorEntries()
                    + " are allowed ("
                    + InputLimits.MAX_DESCRIPTOR_ENTRIES.name()
                    + ")"));
      }
      for (int e = 0; e < descriptor.getEntriesCount(); e++) {
        RateLimitDescriptor.Entry entry = descriptor.getEntries(e);
        String prefix = "descriptor " + d + " entry " + e + ": ";
        String error = tooLong("key", entry.getKey(), limits);
        if (error == null) {
          error = tooLong("value", entry.getValue(), limits);
        }
        if (error != null) {
          return Optional.of(new Refusal(RefusalReason.FIELD_TOO_LONG, prefix + error));
        }
      }
    }
    return Optional.empty();
  }

  private static String tooLong(String field, String value, InputLimits limits) {
    return InputLimits.tooLong(
        field, value, limits.maxDescriptorValueBytes(), InputLimits.MAX_DESCRIPTOR_VALUE_LENGTH);
  }
}
