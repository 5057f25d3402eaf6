package dev.weir.envoy.testkit;

import dev.weir.core.time.Clock;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.BucketId;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse.BucketAction;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaServiceGrpc;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaUsageReports;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaUsageReports.BucketQuotaUsage;
import io.envoyproxy.envoy.type.v3.RateLimitStrategy;
import io.envoyproxy.envoy.type.v3.TokenBucket;
import io.grpc.Channel;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A simulated Envoy proxy running the {@code envoy.filters.http.rate_limit_quota} filter against an
 * RLQS server through Envoy's generated client stub, deciding every request locally the way the
 * filter of Envoy 1.34 does (its {@code filter.cc} and {@code global_client_impl.cc}):
 *
 * <ul>
 *   <li>A request into a bucket it does not track creates the bucket under {@code
 *       no_assignment_behavior} (allowed unless that is {@code DENY_ALL}), counts it, and sends
 *       that bucket's usage at once; the first bucket also starts the report timer.
 *   <li>Every report interval (5 s in Envoy) it sends the usage of every bucket on the stream: the
 *       allowed and denied counts since the bucket's last report, which are reset, and {@code
 *       time_elapsed} in whole seconds.
 *   <li>{@code token_bucket}: continuous fill at {@code tokens_per_fill / fill_interval} (whole
 *       seconds), at most {@code max_tokens}; an assignment whose {@code max_tokens}, {@code
 *       tokens_per_fill} and {@code fill_interval} nanos equal the current one keeps the bucket,
 *       any other starts a new one with the same fraction of tokens as the old (full when there was
 *       none). {@code blanket_rule} allows or denies everything. {@code requests_per_time_unit} is
 *       ignored.
 *   <li>An assignment expires {@code assignment_time_to_live} (whole seconds) after it arrived;
 *       then {@code expired_assignment_behavior}'s fallback applies for its timeout, then (or
 *       without it) {@code no_assignment_behavior}. {@code abandon_action} forgets the bucket.
 *   <li>When the server ends the stream, the next report opens a new one to the next endpoint
 *       (round robin, as an Envoy cluster would pick) and sends there; reports sent on a stream
 *       that fails are lost.
 * </ul>
 *
 * <p>Time is the given {@link Clock}'s monotonic reading; a driver calls {@link #request} for each
 * request and {@link #tick} as time passes. Thread-safe: responses arrive on gRPC's threads.
 */
public final class SimulatedProxy {

  private final String name;
  private final List<Channel> endpoints;
  private final String domain;
  private final Clock clock;
  private final long intervalNanos;
  private final RateLimitStrategy noAssignment;
  private final RateLimitStrategy expiredFallback;
  private final long expiredTimeoutNanos;
  private final Map<BucketId, Bucket> buckets = new LinkedHashMap<>();
  private int nextEndpoint;
  private StreamObserver<RateLimitQuotaUsageReports> stream;
  private Responses current;
  private int connectedTo = -1;
  private long nextReportNanos = Long.MAX_VALUE;
  private long reportsSent;
  private long responsesReceived;
  private long streamsOpened;
  private boolean stopped;

  /**
   * Creates a proxy reporting to {@code endpoints} (the first stream goes to {@code firstEndpoint})
   * in {@code domain} every {@code reportInterval}, with the filter's behaviors: {@code
   * noAssignment} before the first assignment, {@code expiredFallback} (null: none) for {@code
   * expiredTimeout} after an assignment expired.
   */
  public SimulatedProxy(
      String name,
      List<Channel> endpoints,
      int firstEndpoint,
      String domain,
      Clock clock,
      Duration reportInterval,
      RateLimitStrategy noAssignment,
      RateLimitStrategy expiredFallback,
      Duration expiredTimeout) {
    this.name = name;
    this.endpoints = List.copyOf(endpoints);
    this.nextEndpoint = firstEndpoint % endpoints.size();
    this.domain = domain;
    this.clock = clock;
    this.intervalNanos = reportInterval.toNanos();
    this.noAssignment = noAssignment;
    this.expiredFallback = expiredFallback;
    this.expiredTimeoutNanos = expiredTimeout.toNanos();
  }

  /** Returns a strategy allowing every request, Envoy's default {@code no_assignment_behavior}. */
  public static RateLimitStrategy allowAll() {
    return RateLimitStrategy.newBuilder()
        .setBlanketRule(RateLimitStrategy.BlanketRule.ALLOW_ALL)
        .build();
  }

  /** Returns the proxy's name. */
  public String name() {
    return name;
  }

  /** Decides a request into {@code bucket} now: returns whether it is allowed. */
  public synchronized boolean request(BucketId bucket) {
    long now = clock.monotonicNanos();
    if (stopped) {
      return false;
    }
    Bucket b = buckets.get(bucket);
    if (b == null) {
      b = new Bucket(bucket, now);
      b.applyDefault(now);
      boolean allowed = b.allows(now);
      b.count(allowed);
      buckets.put(bucket, b);
      if (nextReportNanos == Long.MAX_VALUE) {
        nextReportNanos = now + intervalNanos;
      }
      send(report(List.of(b), now));
      return allowed;
    }
    b.expireIfDue(now);
    boolean allowed = b.allows(now);
    b.count(allowed);
    return allowed;
  }

  /** Runs what is due now: expiring assignments and, every report interval, the usage report. */
  public synchronized void tick() {
    long now = clock.monotonicNanos();
    if (stopped) {
      return;
    }
    buckets.values().forEach(b -> b.expireIfDue(now));
    if (now >= nextReportNanos) {
      while (nextReportNanos <= now) {
        nextReportNanos += intervalNanos;
      }
      if (!buckets.isEmpty()) {
        send(report(List.copyOf(buckets.values()), now));
      }
    }
  }

  /** Stops the proxy: it half-closes its stream and decides no more requests. */
  public synchronized void stop() {
    stopped = true;
    if (stream != null) {
      stream.onCompleted();
      stream = null;
    }
  }

  /** Returns the report messages sent. */
  public synchronized long reportsSent() {
    return reportsSent;
  }

  /** Returns the response messages received. */
  public synchronized long responsesReceived() {
    return responsesReceived;
  }

  /** Returns how many streams the proxy opened. */
  public synchronized long streamsOpened() {
    return streamsOpened;
  }

  /** Returns the index of the endpoint of the current stream, -1 when it has none. */
  public synchronized int connectedTo() {
    return stream == null ? -1 : connectedTo;
  }

  /** Returns the current assignment of {@code bucket}, null while it has none (or is untracked). */
  public synchronized BucketAction assignment(BucketId bucket) {
    Bucket b = buckets.get(bucket);
    return b == null ? null : b.action;
  }

  private RateLimitQuotaUsageReports report(List<Bucket> of, long now) {
    RateLimitQuotaUsageReports.Builder r =
        RateLimitQuotaUsageReports.newBuilder().setDomain(domain);
    for (Bucket b : of) {
      r.addBucketQuotaUsages(
          BucketQuotaUsage.newBuilder()
              .setBucketId(b.id)
              .setTimeElapsed(
                  com.google.protobuf.Duration.newBuilder()
                      .setSeconds((now - b.lastReportNanos) / 1_000_000_000L))
              .setNumRequestsAllowed(b.allowed)
              .setNumRequestsDenied(b.denied));
      b.allowed = 0;
      b.denied = 0;
      b.lastReportNanos = now;
    }
    return r.build();
  }

  private void send(RateLimitQuotaUsageReports reports) {
    if (stream == null) {
      connectedTo = nextEndpoint;
      nextEndpoint = (nextEndpoint + 1) % endpoints.size();
      streamsOpened++;
      current = new Responses();
      stream =
          RateLimitQuotaServiceGrpc.newStub(endpoints.get(connectedTo))
              .streamRateLimitQuotas(current);
    }
    reportsSent++;
    stream.onNext(reports);
  }

  private synchronized void onResponse(RateLimitQuotaResponse response) {
    responsesReceived++;
    long now = clock.monotonicNanos();
    for (BucketAction action : response.getBucketActionList()) {
      Bucket b = buckets.get(action.getBucketId());
      if (b == null) {
        continue;
      }
      if (action.hasAbandonAction()) {
        buckets.remove(action.getBucketId());
      } else if (action.hasQuotaAssignmentAction()) {
        b.assign(action, now);
      }
    }
  }

  private synchronized void onStreamEnd(Responses ended) {
    if (ended == current) {
      stream = null;
    }
  }

  /** The proxy's side of its stream. */
  private final class Responses implements StreamObserver<RateLimitQuotaResponse> {
    @Override
    public void onNext(RateLimitQuotaResponse value) {
      onResponse(value);
    }

    @Override
    public void onError(Throwable t) {
      onStreamEnd(this);
    }

    @Override
    public void onCompleted() {
      onStreamEnd(this);
    }
  }

  /** One bucket the proxy tracks. */
  private final class Bucket {
    final BucketId id;
    long allowed;
    long denied;
    long lastReportNanos;
    BucketAction action;
    RateLimitStrategy strategy;
    Tokens tokens;
    long expiresAt = Long.MAX_VALUE;
    boolean onFallback;

    Bucket(BucketId id, long now) {
      this.id = id;
      this.lastReportNanos = now;
    }

    void applyDefault(long now) {
      action = null;
      onFallback = false;
      expiresAt = Long.MAX_VALUE;
      setStrategy(noAssignment, now);
    }

    void expireIfDue(long now) {
      if (now < expiresAt) {
        return;
      }
      if (!onFallback && expiredFallback != null) {
        onFallback = true;
        expiresAt = now + expiredTimeoutNanos;
        setStrategy(expiredFallback, now);
      } else {
        applyDefault(now);
      }
    }

    void assign(BucketAction next, long now) {
      RateLimitStrategy s = next.getQuotaAssignmentAction().getRateLimitStrategy();
      if (s.hasRequestsPerTimeUnit()
          || s.getStrategyCase() == RateLimitStrategy.StrategyCase.STRATEGY_NOT_SET) {
        return;
      }
      action = next;
      onFallback = false;
      expiresAt =
          now
              + Duration.ofSeconds(
                      next.getQuotaAssignmentAction().getAssignmentTimeToLive().getSeconds())
                  .toNanos();
      setStrategy(s, now);
    }

    void setStrategy(RateLimitStrategy next, long now) {
      if (next.hasTokenBucket()) {
        TokenBucket tb = next.getTokenBucket();
        boolean same =
            strategy != null
                && strategy.hasTokenBucket()
                && tokens != null
                && strategy.getTokenBucket().getMaxTokens() == tb.getMaxTokens()
                && strategy.getTokenBucket().getTokensPerFill().getValue()
                    == tb.getTokensPerFill().getValue()
                && strategy.getTokenBucket().getFillInterval().getNanos()
                    == tb.getFillInterval().getNanos();
        if (!same) {
          double max = Integer.toUnsignedLong(tb.getMaxTokens());
          long seconds = Math.max(1, tb.getFillInterval().getSeconds());
          double rate = Integer.toUnsignedLong(tb.getTokensPerFill().getValue()) / (double) seconds;
          double initial =
              tokens == null ? max : Math.floor(max * (tokens.remaining(now) / tokens.max));
          tokens = new Tokens(max, rate, initial, now);
        }
      } else {
        tokens = null;
      }
      strategy = next;
    }

    boolean allows(long now) {
      if (strategy.hasTokenBucket()) {
        return tokens.consume(now);
      }
      if (strategy.hasBlanketRule()) {
        return strategy.getBlanketRule() != RateLimitStrategy.BlanketRule.DENY_ALL;
      }
      return true;
    }

    void count(boolean allowedRequest) {
      if (allowedRequest) {
        allowed++;
      } else {
        denied++;
      }
    }
  }

  /** Envoy's atomic token bucket: continuous fill, capped at {@code max}. */
  private static final class Tokens {
    final double max;
    final double rate;
    double tokens;
    long at;

    Tokens(double max, double rate, double initial, long now) {
      this.max = max;
      this.rate = rate;
      this.tokens = Math.min(max, initial);
      this.at = now;
    }

    double remaining(long now) {
      return Math.min(max, tokens + rate * (now - at) / 1e9);
    }

    boolean consume(long now) {
      tokens = remaining(now);
      at = now;
      if (tokens >= 1) {
        tokens -= 1;
        return true;
      }
      return false;
    }
  }
}
