package dev.weir.envoy.rlqs;

import com.google.protobuf.UInt32Value;
import dev.weir.core.quota.QuotaShare;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.BucketId;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse.BucketAction;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse.BucketAction.AbandonAction;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse.BucketAction.QuotaAssignmentAction;
import io.envoyproxy.envoy.type.v3.RateLimitStrategy;
import io.envoyproxy.envoy.type.v3.TokenBucket;
import java.time.Duration;
import java.util.List;

/**
 * The bucket actions Weir sends Envoy's {@code rate_limit_quota} filter, pure.
 *
 * <p>A share with a rate becomes a {@code token_bucket} whose {@code fill_interval} is {@link
 * #FILL_INTERVAL} with {@code tokens_per_fill} the rate times the interval rounded down, so the
 * proxy never fills faster than its share. A rate below one request per {@link #FILL_INTERVAL}
 * (a long window, such as a day, spread over its proxies) fills one token per {@link
 * #fillInterval} instead: the rate's whole seconds per request, rounded up, whose nanos repeat its
 * seconds. The filter keeps its token bucket when {@code max_tokens}, {@code tokens_per_fill} and
 * the nanos of {@code fill_interval} are unchanged and divides by whole seconds of the interval, so
 * every change of rate changes one of them. {@code requests_per_time_unit} is never sent: the
 * filter ignores it.
 */
public final class Assignments {

  /** The {@code fill_interval} of every token bucket. */
  public static final Duration FILL_INTERVAL = Duration.ofSeconds(60);

  private static final long UINT32_MAX = 0xFFFF_FFFFL;

  private Assignments() {}

  /** The kind of an action, as metrics count it. */
  public enum Kind {
    /** A {@code token_bucket} assignment. */
    TOKEN_BUCKET,
    /** {@code blanket_rule: ALLOW_ALL}. */
    ALLOW_ALL,
    /** {@code blanket_rule: DENY_ALL}. */
    DENY_ALL,
    /** An {@code abandon_action}. */
    ABANDON
  }

  /** Returns the kind of {@code action}. */
  public static Kind kindOf(BucketAction action) {
    if (action.hasAbandonAction()) {
      return Kind.ABANDON;
    }
    RateLimitStrategy s = action.getQuotaAssignmentAction().getRateLimitStrategy();
    if (s.hasTokenBucket()) {
      return Kind.TOKEN_BUCKET;
    }
    return s.getBlanketRule() == RateLimitStrategy.BlanketRule.DENY_ALL
        ? Kind.DENY_ALL
        : Kind.ALLOW_ALL;
  }

  /**
   * Returns the assignment of the smallest of {@code shares} (one per policy of the bucket's rule):
   * a token bucket of its rate and burst, or {@code DENY_ALL} when its rate or burst is 0; lives
   * {@code ttl}.
   */
  public static BucketAction share(BucketId bucket, List<QuotaShare> shares, Duration ttl) {
    long milliRate = Long.MAX_VALUE;
    long burst = Long.MAX_VALUE;
    for (QuotaShare s : shares) {
      milliRate = Math.min(milliRate, s.milliRate());
      burst = Math.min(burst, s.burst());
    }
    if (shares.isEmpty() || milliRate <= 0 || burst < 1) {
      return blanket(bucket, RateLimitStrategy.BlanketRule.DENY_ALL, ttl);
    }
    long tokensPerFill = Math.max(1, tokensPerFill(milliRate));
    TokenBucket tokens =
        TokenBucket.newBuilder()
            .setMaxTokens((int) Math.min(burst, UINT32_MAX))
            .setTokensPerFill(UInt32Value.of((int) Math.min(tokensPerFill, UINT32_MAX)))
            .setFillInterval(duration(fillInterval(milliRate)))
            .build();
    return assignment(bucket, RateLimitStrategy.newBuilder().setTokenBucket(tokens).build(), ttl);
  }

  /** Returns a {@code blanket_rule} assignment that lives {@code ttl}. */
  public static BucketAction blanket(
      BucketId bucket, RateLimitStrategy.BlanketRule rule, Duration ttl) {
    return assignment(bucket, RateLimitStrategy.newBuilder().setBlanketRule(rule).build(), ttl);
  }

  /** Returns an {@code abandon_action}. */
  public static BucketAction abandon(BucketId bucket) {
    return BucketAction.newBuilder()
        .setBucketId(bucket)
        .setAbandonAction(AbandonAction.getDefaultInstance())
        .build();
  }

  /**
   * Returns the {@code fill_interval} of a rate of {@code milliRate} (thousandths per second, at
   * least 1): {@link #FILL_INTERVAL} when it fills a token in it, else the whole seconds one
   * token takes, rounded up (at most 1000 s), with as many nanoseconds as seconds, so that Envoy's
   * filter, which compares only the nanos of two intervals, sees every change of it.
   */
  static Duration fillInterval(long milliRate) {
    if (tokensPerFill(milliRate) >= 1) {
      return FILL_INTERVAL;
    }
    long seconds = (1000 + milliRate - 1) / milliRate;
    return Duration.ofSeconds(seconds, seconds);
  }

  /**
   * Returns the {@code tokens_per_fill} of a rate of {@code milliRate} thousandths per second over
   * {@link #FILL_INTERVAL}.
   */
  static long tokensPerFill(long milliRate) {
    if (milliRate <= 0) {
      return 0;
    }
    return Math.multiplyHigh(milliRate, FILL_INTERVAL.toSeconds()) != 0
        ? UINT32_MAX
        : milliRate * FILL_INTERVAL.toSeconds() / 1000;
  }

  private static BucketAction assignment(
      BucketId bucket, RateLimitStrategy strategy, Duration ttl) {
    return BucketAction.newBuilder()
        .setBucketId(bucket)
        .setQuotaAssignmentAction(
            QuotaAssignmentAction.newBuilder()
                .setAssignmentTimeToLive(duration(ttl))
                .setRateLimitStrategy(strategy))
        .build();
  }

  private static com.google.protobuf.Duration duration(Duration d) {
    return com.google.protobuf.Duration.newBuilder()
        .setSeconds(d.getSeconds())
        .setNanos(d.getNano())
        .build();
  }
}
