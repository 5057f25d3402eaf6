package dev.weir.envoy.rlqs;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The settings of Envoy's rate-limit quota service (RLQS), read from {@code WEIR_RLQS_*}
 * environment variables.
 *
 * @param reportInterval the interval the proxies report at; shares are planned over it,
 *     assignments live twice as long and idle buckets are abandoned after {@link #idleAfter}
 * @param unmatched the assignment of buckets no rule matches
 * @param shadowMode whether every limited bucket is assigned {@code ALLOW_ALL}, as {@code
 *     WEIR_ENVOY_SHADOW_MODE} turns every {@code ShouldRateLimit} OVER_LIMIT into OK
 * @param maxBuckets the most buckets one stream holds; a further bucket is answered without being
 *     held ({@code WEIR_RLQS_MAX_BUCKETS})
 * @param maxNodeBucketBytes the most bytes of buckets all streams of the node hold together; a
 *     further bucket is answered without being held ({@code WEIR_RLQS_MAX_NODE_BUCKET_BYTES})
 */
public record RlqsSettings(
    Duration reportInterval,
    Unmatched unmatched,
    boolean shadowMode,
    int maxBuckets,
    long maxNodeBucketBytes) {

  /** What a bucket no rule matches is assigned. */
  public enum Unmatched {
    /** {@code blanket_rule: ALLOW_ALL}. */
    ALLOW_ALL,
    /** {@code blanket_rule: DENY_ALL}. */
    DENY_ALL
  }

  /** {@code WEIR_RLQS_REPORT_INTERVAL}. */
  public static final EnvVar REPORT_INTERVAL = EnvVar.of("WEIR_RLQS_REPORT_INTERVAL");

  /** {@code WEIR_RLQS_UNMATCHED_BUCKETS}. */
  public static final EnvVar UNMATCHED_BUCKETS = EnvVar.of("WEIR_RLQS_UNMATCHED_BUCKETS");

  /** {@code WEIR_RLQS_MAX_BUCKETS}. */
  public static final EnvVar MAX_BUCKETS = EnvVar.of("WEIR_RLQS_MAX_BUCKETS");

  /** The most buckets one stream holds by default: as many as {@code WEIR_CACHE_SIZE}'s default. */
  public static final int DEFAULT_MAX_BUCKETS = 50_000;

  /** The largest {@code WEIR_RLQS_MAX_BUCKETS}. */
  public static final int MAX_MAX_BUCKETS = 10_000_000;

  /** {@code WEIR_RLQS_MAX_NODE_BUCKET_BYTES}. */
  public static final EnvVar MAX_NODE_BUCKET_BYTES = EnvVar.of("WEIR_RLQS_MAX_NODE_BUCKET_BYTES");

  /** The most bytes of buckets the streams of a node hold together by default: 256 MiB. */
  public static final long DEFAULT_MAX_NODE_BUCKET_BYTES = 256L << 20;

  /** The smallest {@code WEIR_RLQS_MAX_NODE_BUCKET_BYTES}: 1 MiB. */
  public static final long MIN_MAX_NODE_BUCKET_BYTES = 1L << 20;

  /** The largest {@code WEIR_RLQS_MAX_NODE_BUCKET_BYTES}: 64 GiB. */
  public static final long MAX_MAX_NODE_BUCKET_BYTES = 64L << 30;

  /** Envoy's filter reports every 5 s. */
  public static final Duration DEFAULT_REPORT_INTERVAL = Duration.ofSeconds(5);

  /** The settings when no variable is set. */
  public static final RlqsSettings DEFAULTS = fromEnvironment(Map.of());

  /** Creates settings. */
  public RlqsSettings {
    Objects.requireNonNull(reportInterval, "reportInterval");
    Objects.requireNonNull(unmatched, "unmatched");
    if (maxBuckets < 1 || maxBuckets > MAX_MAX_BUCKETS) {
      throw new IllegalArgumentException(
          "maxBuckets is " + maxBuckets + "; it must be from 1 to " + MAX_MAX_BUCKETS);
    }
    if (maxNodeBucketBytes < MIN_MAX_NODE_BUCKET_BYTES
        || maxNodeBucketBytes > MAX_MAX_NODE_BUCKET_BYTES) {
      throw new IllegalArgumentException(
          "maxNodeBucketBytes is "
              + maxNodeBucketBytes
              + "; it must be from "
              + MIN_MAX_NODE_BUCKET_BYTES
              + " to "
              + MAX_MAX_NODE_BUCKET_BYTES);
    }
  }

  /**
   * Creates settings without shadow mode, holding {@link #DEFAULT_MAX_BUCKETS} per stream and
   * {@link #DEFAULT_MAX_NODE_BUCKET_BYTES} per node.
   */
  public RlqsSettings(Duration reportInterval, Unmatched unmatched) {
    this(reportInterval, unmatched, false, DEFAULT_MAX_BUCKETS, DEFAULT_MAX_NODE_BUCKET_BYTES);
  }

  /** Returns these settings with {@code shadowMode}. */
  public RlqsSettings withShadowMode(boolean shadowMode) {
    return new RlqsSettings(
        reportInterval, unmatched, shadowMode, maxBuckets, maxNodeBucketBytes);
  }

  /** Returns these settings with {@code maxBuckets}. */
  public RlqsSettings withMaxBuckets(int maxBuckets) {
    return new RlqsSettings(
        reportInterval, unmatched, shadowMode, maxBuckets, maxNodeBucketBytes);
  }

  /** Returns these settings with {@code maxNodeBucketBytes}. */
  public RlqsSettings withMaxNodeBucketBytes(long maxNodeBucketBytes) {
    return new RlqsSettings(
        reportInterval, unmatched, shadowMode, maxBuckets, maxNodeBucketBytes);
  }

  /** Reads the settings from {@code env}; a bad value throws {@link ConfigException}. */
  public static RlqsSettings fromEnvironment(Map<String, String> env) {
    return from(new EnvReader(env));
  }

  /**
   * Reads the settings through {@code reader}; a bad value throws {@link ConfigException} naming
   * the variable, the value and what is allowed.
   */
  public static RlqsSettings from(EnvReader reader) {
    return new RlqsSettings(
        reader.duration(
            REPORT_INTERVAL,
            DEFAULT_REPORT_INTERVAL,
            Duration.ofSeconds(1),
            Duration.ofMinutes(10)),
        Unmatched.valueOf(
            reader
                .oneOf(UNMATCHED_BUCKETS, "allow_all", List.of("allow_all", "deny_all"))
                .toUpperCase(java.util.Locale.ROOT)),
        false,
        reader.intInRange(MAX_BUCKETS, DEFAULT_MAX_BUCKETS, 1, MAX_MAX_BUCKETS),
        reader.longInRange(
            MAX_NODE_BUCKET_BYTES,
            DEFAULT_MAX_NODE_BUCKET_BYTES,
            MIN_MAX_NODE_BUCKET_BYTES,
            MAX_MAX_NODE_BUCKET_BYTES));
  }

  /** The least time without requests after which a bucket is abandoned. */
  public static final Duration MIN_IDLE = Duration.ofSeconds(60);

  /** The least number of report intervals without requests after which a bucket is abandoned. */
  public static final int IDLE_INTERVALS = 6;

  /**
   * Returns how long a bucket may go without requests before its stream abandons it: the longer of
   * {@value #IDLE_INTERVALS} report intervals and {@link #MIN_IDLE} (60 s at Envoy's 5 s).
   */
  public Duration idleAfter() {
    Duration intervals = reportInterval.multipliedBy(IDLE_INTERVALS);
    return intervals.compareTo(MIN_IDLE) > 0 ? intervals : MIN_IDLE;
  }

  /**
   * Returns how long an assignment lives: twice the report interval, in whole seconds rounded up.
   */
  public Duration assignmentTimeToLive() {
    long millis = reportInterval.multipliedBy(2).toMillis();
    return Duration.ofSeconds((millis + 999) / 1000);
  }
}
