package dev.weir.envoy.rlqs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.quota.QuotaShare;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.BucketId;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class StreamBucketTest {

  private static final BucketId ID = BucketId.newBuilder().putBucket("name", "api").build();
  private static final Duration TTL = Duration.ofSeconds(10);

  private final StreamBucket bucket =
      new StreamBucket(
          ID,
          "api",
          new BucketPlan.Limited(
              List.of(
                  RateLimitRequest.builder("rlqs:api", "k").limit(600).duration(60_000).build())));

  @Test
  void ownerDoesNotAnswerAfterAShare_theLastShareIsStillAssigned() {
    QuotaShare share = new QuotaShare(10_000, 10, 0, 1_000, 1, "");
    bucket.accept(0, share, true);

    boolean taken =
        bucket.accept(
            0, QuotaShare.error("error while reporting quota usage to peer 'b': DEADLINE_EXCEEDED"), true);

    assertThat(taken).isFalse();
    assertThat(bucket.limitedAction(TTL)).contains(Assignments.share(ID, List.of(share), TTL));
  }

  @Test
  void ownerDoesNotAnswerTheFirstReport_noAssignmentYet() {
    bucket.accept(0, QuotaShare.error("error while reporting quota usage to peer 'b'"), true);

    assertThat(bucket.limitedAction(TTL)).isEmpty();
  }
}
