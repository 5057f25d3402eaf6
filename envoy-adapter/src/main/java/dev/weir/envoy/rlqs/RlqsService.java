package dev.weir.envoy.rlqs;

import dev.weir.core.limiter.ByteBudget;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.quota.QuotaClients;
import dev.weir.core.quota.QuotaPush;
import dev.weir.core.quota.QuotaShare;
import dev.weir.core.quota.QuotaShareReceiver;
import dev.weir.core.quota.QuotaUsage;
import dev.weir.core.time.Clock;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.DomainConfig;
import dev.weir.envoy.service.CounterKeys;
import dev.weir.envoy.service.UnknownDomains;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaServiceGrpc;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaUsageReports;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.LoggerFactory;

/**
 * {@code envoy.service.rate_limit_quota.v3.RateLimitQuotaService/StreamRateLimitQuotas} over the
 * cluster: one {@link QuotaStream} per proxy stream, reporting through {@link QuotaReports} to the
 * owners of the buckets' counters; it also takes the shares owners push ({@link
 * QuotaShareReceiver}), re-plans every stream when the descriptor config reloads and ends every
 * stream when the node drains, so the proxies reconnect to another node.
 *
 * <p>Nothing here blocks: a report is planned on the calling thread and answered when the owners'
 * shares arrive (at once for buckets this node owns).
 */
public final class RlqsService extends RateLimitQuotaServiceGrpc.RateLimitQuotaServiceImplBase
    implements QuotaShareReceiver {

  /** The description of the status streams end with when the node drains. */
  public static final String DRAINING = "this node is shutting down; reconnect to another node";

  private final RateLimitedLogger warnings;
  private final ConfigHolder config;
  private final QuotaReports reports;
  private final String node;
  private final RlqsSettings settings;
  private final BucketPlanner planner;
  private final Clock clock;
  private final RlqsMetrics metrics;
  private final CheckMeter meter;
  private final UnknownDomains unknownDomains;
  private final Duration ttl;
  private final String incarnation;
  private final AtomicLong streamNumbers = new AtomicLong();
  private final Map<String, QuotaStream> streams = new ConcurrentHashMap<>();
  private final AtomicLong reportsReceived = new AtomicLong();
  private final AtomicLong responsesSent = new AtomicLong();
  private final AtomicLong pending = new AtomicLong();
  private final ByteBudget heldBytes;
  private volatile boolean draining;
  private volatile Runnable beforeRegister = () -> {};
  private volatile Runnable beforeBuckets = () -> {};

  /**
   * Creates the service of the node advertised as {@code node}, answering from {@code config}
   * through {@code reports}, with keys and bucket sizes bounded by {@code limits}; counts its
   * meters in {@code metrics}, the buckets it refuses with {@code meter} (the refusal counter
   * {@code ShouldRateLimit} counts in) and the reports of an unknown domain with {@code
   * unknownDomains} (as {@code ShouldRateLimit} counts its calls).
   */
  public RlqsService(
      ConfigHolder config,
      QuotaReports reports,
      String node,
      RlqsSettings settings,
      InputLimits limits,
      Clock clock,
      RlqsMetrics metrics,
      CheckMeter meter,
      UnknownDomains unknownDomains) {
    this.config = config;
    this.reports = reports;
    this.node = node;
    this.settings = settings;
    this.planner =
        new BucketPlanner(
            CounterKeys.of(limits), limits.maxDescriptorEntries(), settings.shadowMode());
    this.clock = clock;
    this.warnings =
        new RateLimitedLogger(
            LoggerFactory.getLogger(RlqsService.class), clock, RateLimitedLogger.DEFAULT_INTERVAL);
    this.metrics = metrics;
    this.meter = meter;
    this.unknownDomains = unknownDomains;
    this.ttl = settings.assignmentTimeToLive();
    this.heldBytes = new ByteBudget(settings.maxNodeBucketBytes());
    this.incarnation = Long.toString(clock.wallMillis());
    metrics.watchStreams(streams::size);
  }

  @Override
  public StreamObserver<RateLimitQuotaUsageReports> streamRateLimitQuotas(
      StreamObserver<RateLimitQuotaResponse> responses) {
    if (draining) {
      responses.onError(Status.UNAVAILABLE.withDescription(DRAINING).asRuntimeException());
      return new Ignored();
    }
    String client = QuotaClients.name(node, incarnation + "." + streamNumbers.incrementAndGet());
    QuotaStream stream = new QuotaStream(this, responses, client);
    beforeRegister.run();
    streams.put(client, stream);
    if (responses instanceof ServerCallStreamObserver<?> call) {
      call.setOnCancelHandler(stream::end);
      // A call closed without the stream knowing (a report refused as malformed before it reached
      // the stream) ends it too.
      call.setOnCloseHandler(stream::end);
    }
    // A drain that began after the check above may have copied the streams before this one was
    // put; it is ended here instead.
    if (draining) {
      stream.close(Status.UNAVAILABLE.withDescription(DRAINING));
    }
    return stream;
  }

  /** Hands each pushed share to its client's stream; returns how many reached a bucket there. */
  @Override
  public int deliver(List<QuotaPush> pushes) {
    Map<String, List<QuotaPush>> byClient = new LinkedHashMap<>();
    for (QuotaPush p : pushes) {
      byClient.computeIfAbsent(p.client(), c -> new ArrayList<>()).add(p);
    }
    int delivered = 0;
    for (Map.Entry<String, List<QuotaPush>> e : byClient.entrySet()) {
      QuotaStream stream = streams.get(e.getKey());
      if (stream != null) {
        delivered += stream.deliver(e.getValue());
      }
    }
    return delivered;
  }

  /** Runs {@code hook} after a new stream passed the draining check and before it is registered. */
  void beforeRegister(Runnable hook) {
    this.beforeRegister = hook;
  }

  /**
   * Runs {@code hook} in each report a stream takes, after the report's domain was taken and before
   * the stream's lock is taken again for its buckets.
   */
  void beforeBuckets(Runnable hook) {
    this.beforeBuckets = hook;
  }

  /** Runs the hook set by {@link #beforeBuckets}. */
  void takingBuckets() {
    beforeBuckets.run();
  }

  /** Re-plans every stream's buckets under the config now loaded; call after each reload. */
  public void configChanged() {
    for (QuotaStream stream : List.copyOf(streams.values())) {
      stream.reconfigure();
    }
  }

  /**
   * Ends every stream with {@code UNAVAILABLE} (so the proxies reconnect to another node at their
   * next report) after releasing their shares, and refuses new streams from now on.
   */
  public void drain() {
    draining = true;
    for (QuotaStream stream : List.copyOf(streams.values())) {
      stream.close(Status.UNAVAILABLE.withDescription(DRAINING));
    }
  }

  /**
   * Returns the service's counts: report messages received, response messages sent, reports and
   * reloads whose shares are still awaited, open streams.
   */
  public Stats stats() {
    return new Stats(reportsReceived.get(), responsesSent.get(), pending.get(), streams.size());
  }

  /**
   * The service's counts.
   *
   * @param reportsReceived report messages received
   * @param responsesSent response messages sent
   * @param pending reports and reloads whose shares are still awaited
   * @param streams open streams
   */
  public record Stats(long reportsReceived, long responsesSent, long pending, int streams) {}

  /** Returns the open streams. */
  List<QuotaStream> streams() {
    return List.copyOf(streams.values());
  }

  DomainConfig domainConfig(String domain) {
    return config.current().flatMap(c -> c.domain(domain)).orElse(null);
  }

  /**
   * Counts and logs a report of a stream whose domain the loaded config does not declare; does
   * nothing while no config is loaded, as {@code ShouldRateLimit} counts nothing then.
   */
  void unknownDomain(String domain) {
    if (config.current().isEmpty()) {
      return;
    }
    unknownDomains.record(
        "RLQS report",
        domain,
        "its buckets are assigned as unmatched (WEIR_RLQS_UNMATCHED_BUCKETS: "
            + settings.unmatched().name().toLowerCase(java.util.Locale.ROOT)
            + ")");
  }

  BucketPlanner planner() {
    return planner;
  }

  /**
   * Sends {@code usage} to its owner through the reports; completes with the proxy's share, or
   * fails when the reports threw or gave no future (so that the stream still answers and its
   * pending count still falls).
   */
  CompletableFuture<QuotaShare> report(QuotaUsage usage) {
    try {
      CompletableFuture<QuotaShare> share = reports.report(usage);
      if (share != null) {
        return share;
      }
      throw new IllegalStateException("the quota reports returned no future");
    } catch (RuntimeException e) {
      warnings.warn(
          "report", "reporting bucket usage for '{}' failed: {}", usage.rule().name(), e.toString());
      return CompletableFuture.failedFuture(e);
    }
  }

  RlqsSettings settings() {
    return settings;
  }

  RlqsMetrics metrics() {
    return metrics;
  }

  /**
   * Counts a bucket planned as {@code refused} in the refusal counter, when its reason is one, and
   * logs why it is assigned {@code DENY_ALL}, naming the stream's {@code domain} and its {@code
   * client} name (at most once per 10 s for each kind of refusal).
   */
  void refused(BucketPlan.Refused refused, String domain, String client) {
    if (refused.counted() != null) {
      meter.refused(refused.counted());
    }
    String kind = refused.counted() == null ? "empty_entry" : refused.counted().label();
    warnings.warn(
        "refused." + kind,
        "an RLQS bucket is assigned DENY_ALL (domain '{}', stream '{}'): {}",
        domain,
        client,
        refused.reason());
  }

  /**
   * Counts a new bucket a stream holding {@code held} buckets did not take, as {@code
   * too_many_buckets} in the refusal counter, and logs it (at most once per 10 s).
   */
  void bucketNotHeld(int held) {
    meter.refused(RefusalReason.TOO_MANY_BUCKETS);
    warnings.warn(
        "too_many_buckets",
        "an RLQS stream holds {} buckets, as many as WEIR_RLQS_MAX_BUCKETS ({}) allows; a new"
            + " bucket is not held until idle ones are abandoned (limited ones are DENY_ALL)",
        held,
        settings.maxBuckets());
  }

  /**
   * Counts a new bucket of {@code bytes} that no stream of the node may hold, as the streams hold
   * as many bytes of buckets as {@code WEIR_RLQS_MAX_NODE_BUCKET_BYTES} allows, as {@code
   * too_many_buckets} in the refusal counter, and logs it (at most once per 10 s).
   */
  void bucketNotHeldOnTheNode(long bytes) {
    meter.refused(RefusalReason.TOO_MANY_BUCKETS);
    warnings.warn(
        "too_many_bucket_bytes",
        "the RLQS streams of this node hold {} bytes of buckets; a new bucket of {} bytes would"
            + " pass WEIR_RLQS_MAX_NODE_BUCKET_BYTES ({}) and is not held until buckets are"
            + " abandoned or streams end (limited ones are DENY_ALL)",
        heldBytes.held(),
        bytes,
        heldBytes.most());
  }

  /** Returns the bytes of buckets the node's streams hold, bounded by the node's setting. */
  ByteBudget heldBytes() {
    return heldBytes;
  }

  Clock clock() {
    return clock;
  }

  Duration ttl() {
    return ttl;
  }

  long intervalMillis() {
    return settings.reportInterval().toMillis();
  }

  void unregister(QuotaStream stream) {
    streams.remove(stream.client(), stream);
  }

  void reportReceived() {
    reportsReceived.incrementAndGet();
  }

  void responseSent() {
    responsesSent.incrementAndGet();
  }

  void started() {
    pending.incrementAndGet();
  }

  void finished() {
    pending.decrementAndGet();
  }

  /** The observer of a stream refused while draining: ignores what the proxy sends. */
  private static final class Ignored implements StreamObserver<RateLimitQuotaUsageReports> {
    @Override
    public void onNext(RateLimitQuotaUsageReports value) {}

    @Override
    public void onError(Throwable t) {}

    @Override
    public void onCompleted() {}
  }
}
