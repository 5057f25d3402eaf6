package dev.weir.envoy.rlqs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.limiter.ByteBudget;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.BucketId;
import org.junit.jupiter.api.Test;

class HeldBucketBytesTest {

  @Test
  void smallBucket_countsItsHeapBesidesItsIdAndKey_notOnlyTheirFewBytes() {
    BucketId id = BucketId.newBuilder().putBucket("a", "1").build();

    long bytes = HeldBucketBytes.of(id, "a=1");

    assertThat(bytes)
        .as("a bucket a=1 costs hundreds of bytes of heap")
        .isGreaterThanOrEqualTo(256L);
  }

  @Test
  void nodeBound_holdsAsManySmallBucketsAsTheirHeapAllows() {
    ByteBudget held = new ByteBudget(1 << 20);
    BucketId id = BucketId.newBuilder().putBucket("a", "1").build();
    int taken = 0;
    while (held.take(HeldBucketBytes.of(id, "a=1"))) {
      taken++;
    }

    assertThat(taken).as("buckets a=1 held in 1 MiB").isLessThan(2_048);
  }
}
