package dev.weir.server;

import dev.weir.envoy.service.WarmUpRequests;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.RateLimitReq;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@code GetRateLimits} requests a start-up warm-up sends when no descriptor config has a
 * limited rule: every other one of ten items, the others of one, all under {@link #NAME}, whose
 * keys are, as in {@link WarmUpRequests}, every other time one of a few and else one of many.
 */
final class NativeWarmUpRequests {

  /** The native name the requests count under. */
  static final String NAME = "weir_warm_up";

  private NativeWarmUpRequests() {}

  /** Returns {@code count} serialized {@code GetRateLimitsReq}s. */
  static List<byte[]> of(int count) {
    List<byte[]> requests = new ArrayList<>(count);
    int n = 0;
    for (int i = 0; i < count; i++) {
      GetRateLimitsReq.Builder request = GetRateLimitsReq.newBuilder();
      int items = i % 2 == 0 ? 1 : 10;
      for (int item = 0; item < items; item++) {
        request.addRequests(
            RateLimitReq.newBuilder()
                .setName(NAME)
                .setUniqueKey("key-" + WarmUpRequests.variant(n++))
                .setHits(1)
                .setLimit(1_000)
                .setDuration(60_000));
      }
      requests.add(request.build().toByteArray());
    }
    return requests;
  }
}
