package dev.weir.envoy.rlqs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.quota.QuotaShare;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.BucketId;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse.BucketAction;
import io.envoyproxy.envoy.type.v3.RateLimitStrategy;
import io.envoyproxy.envoy.type.v3.TokenBucket;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class AssignmentsTest {

  private static final BucketId BUCKET = BucketId.newBuilder().putBucket("name", "api").build();
  private static final Duration TTL = Duration.ofSeconds(10);

  private static QuotaShare share(long milliRate, long burst) {
    return new QuotaShare(milliRate, burst, 0, 1, 1, "");
  }

  @Test
  void share_isATokenBucketOfTheRatePerMinuteAndTheBurst() {
    BucketAction action = Assignments.share(BUCKET, List.of(share(12_500, 13)), TTL);

    TokenBucket tokens = action.getQuotaAssignmentAction().getRateLimitStrategy().getTokenBucket();
    assertThat(tokens.getMaxTokens()).isEqualTo(13);
    assertThat(tokens.getTokensPerFill().getValue()).isEqualTo(750);
    assertThat(tokens.getFillInterval().getSeconds()).isEqualTo(60);
    assertThat(tokens.getFillInterval().getNanos()).isZero();
    assertThat(action.getQuotaAssignmentAction().getAssignmentTimeToLive().getSeconds())
        .isEqualTo(10);
    assertThat(action.getBucketId()).isEqualTo(BUCKET);
    assertThat(Assignments.kindOf(action)).isEqualTo(Assignments.Kind.TOKEN_BUCKET);
  }

  @Test
  void share_severalPolicies_takesTheSmallest() {
    BucketAction action =
        Assignments.share(BUCKET, List.of(share(50_000, 50), share(2_000, 2)), TTL);

    TokenBucket tokens = action.getQuotaAssignmentAction().getRateLimitStrategy().getTokenBucket();
    assertThat(tokens.getTokensPerFill().getValue()).isEqualTo(120);
    assertThat(tokens.getMaxTokens()).isEqualTo(2);
  }

  @Test
  void share_belowOneRequestAMinute_fillsOneTokenPerTheSecondsOneRequestTakes() {
    BucketAction action = Assignments.share(BUCKET, List.of(share(16, 1)), TTL);

    TokenBucket tokens = action.getQuotaAssignmentAction().getRateLimitStrategy().getTokenBucket();
    assertThat(tokens.getTokensPerFill().getValue()).isEqualTo(1);
    assertThat(tokens.getMaxTokens()).isEqualTo(1);
    assertThat(tokens.getFillInterval().getSeconds()).as("1000/16 s, rounded up").isEqualTo(63);
    assertThat(tokens.getFillInterval().getNanos())
        .as("the nanos Envoy compares repeat the seconds")
        .isEqualTo(63);
  }

  @Test
  void share_oneThousandthOfARequestASecond_fillsOneTokenPer1000Seconds() {
    TokenBucket tokens =
        Assignments.share(BUCKET, List.of(share(1, 1)), TTL)
            .getQuotaAssignmentAction()
            .getRateLimitStrategy()
            .getTokenBucket();

    assertThat(tokens.getTokensPerFill().getValue()).isEqualTo(1);
    assertThat(tokens.getFillInterval().getSeconds()).isEqualTo(1000);
  }

  @Test
  void share_zero_deniesAll() {
    assertThat(Assignments.kindOf(Assignments.share(BUCKET, List.of(share(0, 0)), TTL)))
        .isEqualTo(Assignments.Kind.DENY_ALL);
  }

  @Test
  void share_hugeRate_isCappedAtUint32() {
    TokenBucket tokens =
        Assignments.share(BUCKET, List.of(share(Long.MAX_VALUE / 2, 1L << 40)), TTL)
            .getQuotaAssignmentAction()
            .getRateLimitStrategy()
            .getTokenBucket();

    assertThat(Integer.toUnsignedLong(tokens.getMaxTokens())).isEqualTo(0xFFFF_FFFFL);
    assertThat(Integer.toUnsignedLong(tokens.getTokensPerFill().getValue()))
        .isEqualTo(0xFFFF_FFFFL);
  }

  @Test
  void abandon_isAnAbandonAction() {
    BucketAction action = Assignments.abandon(BUCKET);

    assertThat(action.hasAbandonAction()).isTrue();
    assertThat(Assignments.kindOf(action)).isEqualTo(Assignments.Kind.ABANDON);
  }

  @Test
  void ttl_isTwiceTheReportIntervalInWholeSeconds() {
    assertThat(
            new RlqsSettings(Duration.ofMillis(2500), RlqsSettings.Unmatched.ALLOW_ALL)
                .assignmentTimeToLive())
        .isEqualTo(Duration.ofSeconds(5));
    assertThat(
            new RlqsSettings(Duration.ofMillis(1200), RlqsSettings.Unmatched.ALLOW_ALL)
                .assignmentTimeToLive())
        .isEqualTo(Duration.ofSeconds(3));
  }

  @Test
  void idleAfter_isTheLongerOfSixReportIntervalsAndAMinute() {
    assertThat(
            new RlqsSettings(Duration.ofSeconds(5), RlqsSettings.Unmatched.ALLOW_ALL).idleAfter())
        .isEqualTo(Duration.ofSeconds(60));
    assertThat(
            new RlqsSettings(Duration.ofSeconds(30), RlqsSettings.Unmatched.ALLOW_ALL).idleAfter())
        .isEqualTo(Duration.ofSeconds(180));
  }
}
