package dev.weir.envoy.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.limiter.InputLimits;
import dev.weir.core.metrics.RefusalReason;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import org.junit.jupiter.api.Test;

class DescriptorLimitsTest {

  private static final InputLimits LIMITS = new InputLimits(65_536, 1024, 1024, 1024, 2, 5);

  private static RateLimitRequest request(String... keyValues) {
    RateLimitDescriptor.Builder descriptor = RateLimitDescriptor.newBuilder();
    for (int i = 0; i < keyValues.length; i += 2) {
      descriptor.addEntries(
          RateLimitDescriptor.Entry.newBuilder().setKey(keyValues[i]).setValue(keyValues[i + 1]));
    }
    return RateLimitRequest.newBuilder()
        .setDomain("d")
        .addDescriptors(RateLimitDescriptor.newBuilder().addEntries(
            RateLimitDescriptor.Entry.newBuilder().setKey("k").setValue("v")))
        .addDescriptors(descriptor)
        .build();
  }

  @Test
  void check_withinLimits_empty() {
    assertThat(DescriptorLimits.check(request("a", "12345", "b", "c"), LIMITS)).isEmpty();
  }

  @Test
  void check_tooManyEntries_refusalNamesDescriptorCountAndMax() {
    assertThat(DescriptorLimits.check(request("a", "1", "b", "2", "c", "3"), LIMITS))
        .contains(
            new DescriptorLimits.Refusal(
                RefusalReason.TOO_MANY_ENTRIES,
                "descriptor 1 has 3 entries; at most 2 are allowed (WEIR_MAX_DESCRIPTOR_ENTRIES)"));
  }

  @Test
  void check_valueTooLong_refusalNamesEntryFieldLengthAndMax() {
    assertThat(DescriptorLimits.check(request("a", "1", "b", "123456"), LIMITS))
        .contains(
            new DescriptorLimits.Refusal(
                RefusalReason.FIELD_TOO_LONG,
                "descriptor 1 entry 1: field 'value' is 6 bytes long; at most 5 are allowed"
                    + " (WEIR_MAX_DESCRIPTOR_VALUE_LENGTH)"));
  }
}
