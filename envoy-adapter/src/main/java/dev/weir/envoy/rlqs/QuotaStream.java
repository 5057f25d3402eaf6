package dev.weir.envoy.rlqs;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.quota.QuotaPush;
import dev.weir.core.quota.QuotaUsage;
import dev.weir.envoy.config.DomainConfig;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.BucketId;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse.BucketAction;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaUsageReports;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaUsageReports.BucketQuotaUsage;
import io.envoyproxy.envoy.type.v3.RateLimitStrategy;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * One proxy's {@code StreamRateLimitQuotas} stream: takes its usage reports, sends each limited
 * bucket's usage to the owners of its counters and answers every report with the bucket actions of
 * the buckets it named; sends the shares owners push, a config reload's consequences, and at the
 * end releases the proxy's shares.
 *
 * <p>Design: the stream's state and every write to the proxy are guarded by the stream's lock, and
 * no call leaves the stream while it is held (usage goes to the owners after the lock is released),
 * so a push arriving from an owner on another thread can never deadlock with a report. Each report
 * is answered once the shares of all its limited buckets are in; a bucket whose owner could not
 * answer is left out of the answer, so the proxy keeps its assignment until it expires.
 */
final class QuotaStream implements StreamObserver<RateLimitQuotaUsageReports> {

  /** The most requests one report may count: larger (or, as uint64, negative) counts are capped. */
  static final long MAX_COUNT = 1L << 50;

  private final RlqsService service;
  private final StreamObserver<RateLimitQuotaResponse> proxy;
  private final String client;
  private final Map<String, StreamBucket> buckets = new LinkedHashMap<>();
  private final Map<String, StreamBucket> byCounter = new HashMap<>();
  private String domain;
  private boolean ended;
  private boolean released;

  QuotaStream(RlqsService service, StreamObserver<RateLimitQuotaResponse> proxy, String client) {
    this.service = service;
    this.proxy = proxy;
    this.client = client;
  }

  /** Returns the stream's client name, as owners know it. */
  String client() {
    return client;
  }

  @Override
  public void onNext(RateLimitQuotaUsageReports reports) {
    try {
      take(reports);
    } finally {
      service.reportReceived();
    }
  }

  private void take(RateLimitQuotaUsageReports reports) {
    List<BucketAction> now = new ArrayList<>();
    List<StreamBucket> limited = new ArrayList<>();
    List<Pending> pending = new ArrayList<>();
    boolean refused = false;
    synchronized (this) {
      if (ended) {
        return;
      }
      String error = takeDomain(reports.getDomain());
      if (error != null) {
        endWith(Status.INVALID_ARGUMENT.withDescription(error));
        refused = true;
      }
    }
    if (refused) {
      end();
      return;
    }
    synchronized (this) {
      DomainConfig config = service.domainConfig(domain);
      long nanos = service.clock().monotonicNanos();
      for (BucketQuotaUsage usage : reports.getBucketQuotaUsagesList()) {
        Map<String, String> entries = usage.getBucketId().getBucketMap();
        if (entries.isEmpty()) {
          continue;
        }
        long allowed = count(usage.getNumRequestsAllowed());
        long denied = count(usage.getNumRequestsDenied());
        service.metrics().usageReport(allowed, denied);
        StreamBucket bucket = bucket(usage.getBucketId(), config);
        long elapsed =
            bucket.lastReportNanos == 0
                ? Math.max(0, usage.getTimeElapsed().getSeconds()) * 1000
                : (nanos - bucket.lastReportNanos) / 1_000_000;
        bucket.lastReportNanos = nanos;
        if (bucket.plan instanceof BucketPlan.Limited plan) {
          limited.add(bucket);
          for (int i = 0; i < plan.policies().size(); i++) {
            pending.add(
                new Pending(
                    bucket,
                    i,
                    new QuotaUsage(
                        plan.policies().get(i),
                        client,
                        allowed,
                        denied,
                        elapsed,
                        service.intervalMillis(),
                        false)));
          }
        } else {
          now.add(staticAction(bucket));
        }
      }
    }
    if (pending.isEmpty()) {
      answer(now, List.of());
      return;
    }
    reportThenAnswer(pending, now, limited);
  }

  /**
   * Reports each of {@code pending}'s usages to its owner, takes the shares answered into their
   * buckets, and then sends {@code actions} with the current actions of {@code limited}.
   */
  private void reportThenAnswer(
      List<Pending> pending, List<BucketAction> actions, List<StreamBucket> limited) {
    service.started();
    CompletableFuture<?>[] shares = new CompletableFuture<?>[pending.size()];
    for (int i = 0; i < pending.size(); i++) {
      Pending p = pending.get(i);
      shares[i] =
          service
              .report(p.usage())
              .thenAccept(
                  share -> {
                    synchronized (this) {
                      p.bucket().accept(p.index(), share, true);
                    }
                  });
    }
    CompletableFuture.allOf(shares)
        .whenComplete(
            (done, failure) -> {
              try {
                answer(actions, limited);
              } finally {
                service.finished();
              }
            });
  }

  /** Sends {@code actions} and the current actions of {@code limited} buckets as one response. */
  private synchronized void answer(List<BucketAction> actions, List<StreamBucket> limited) {
    List<BucketAction> all = new ArrayList<>(actions);
    for (StreamBucket b : limited) {
      b.limitedAction(service.ttl()).ifPresent(all::add);
    }
    send(all);
  }

  /** Takes pushed shares of this stream's buckets; returns how many were for a bucket here. */
  synchronized int deliver(List<QuotaPush> pushes) {
    if (ended) {
      return 0;
    }
    int known = 0;
    Set<StreamBucket> changed = new LinkedHashSet<>();
    for (QuotaPush p : pushes) {
      StreamBucket bucket = byCounter.get(p.key());
      if (bucket == null) {
        continue;
      }
      known++;
      if (bucket.accept(bucket.policyIndex(p.key()), p.share(), false)) {
        changed.add(bucket);
      }
    }
    List<BucketAction> actions = new ArrayList<>();
    for (StreamBucket b : changed) {
      b.limitedAction(service.ttl()).filter(a -> !a.equals(b.lastSent)).ifPresent(actions::add);
    }
    send(actions);
    return known;
  }

  /**
   * Re-plans every bucket under the current config: a bucket whose rule is gone is abandoned, one
   * that became unlimited or unmatched gets its new blanket assignment, one whose limits changed
   * asks its owners for new shares and gets them pushed; released counters free the proxy's shares.
   */
  void reconfigure() {
    List<BucketAction> now = new ArrayList<>();
    List<QuotaUsage> releases = new ArrayList<>();
    List<Pending> asks = new ArrayList<>();
    List<StreamBucket> asked = new ArrayList<>();
    synchronized (this) {
      if (ended || domain == null) {
        return;
      }
      DomainConfig config = service.domainConfig(domain);
      for (StreamBucket b : List.copyOf(buckets.values())) {
        BucketPlan next = service.planner().plan(config, b.id.getBucketMap());
        if (next.equals(b.plan)) {
          continue;
        }
        releases.addAll(releasesOf(b, next));
        unindex(b);
        if (next instanceof BucketPlan.Unmatched && !(b.plan instanceof BucketPlan.Unmatched)) {
          buckets.remove(b.name);
          now.add(Assignments.abandon(b.id));
          continue;
        }
        b.replan(next);
        index(b);
        if (next instanceof BucketPlan.Limited plan) {
          asked.add(b);
          for (int i = 0; i < plan.policies().size(); i++) {
            asks.add(
                new Pending(
                    b,
                    i,
                    new QuotaUsage(
                        plan.policies().get(i), client, 0, 0, 0, service.intervalMillis(), false)));
          }
        } else {
          now.add(staticAction(b));
        }
      }
      send(now);
    }
    releases.forEach(service::report);
    if (asks.isEmpty()) {
      return;
    }
    reportThenAnswer(asks, List.of(), asked);
  }

  @Override
  public void onError(Throwable t) {
    end();
  }

  @Override
  public void onCompleted() {
    synchronized (this) {
      if (!ended) {
        proxy.onCompleted();
      }
    }
    end();
  }

  /** Ends the stream with {@code status} (the node is draining), releasing the proxy's shares. */
  void close(Status status) {
    synchronized (this) {
      endWith(status);
    }
    end();
  }

  /** Marks the stream ended, unregisters it and releases the proxy's shares, once. */
  void end() {
    List<QuotaUsage> releases = new ArrayList<>();
    synchronized (this) {
      ended = true;
      if (released) {
        return;
      }
      released = true;
      for (StreamBucket b : buckets.values()) {
        releases.addAll(releasesOf(b, new BucketPlan.Unmatched()));
      }
      buckets.clear();
      byCounter.clear();
    }
    service.unregister(this);
    releases.forEach(service::report);
  }

  // Caller holds the lock.
  private void endWith(Status status) {
    if (!ended) {
      ended = true;
      try {
        proxy.onError(status.asRuntimeException());
      } catch (RuntimeException alreadyClosed) {
        // the call was cancelled meanwhile
      }
    }
  }

  // Caller holds the lock.
  private String takeDomain(String named) {
    if (domain == null) {
      if (named.isEmpty()) {
        return "the first report of a stream must name its domain";
      }
      domain = named;
      return null;
    }
    if (!named.isEmpty() && !named.equals(domain)) {
      return "the stream's domain is '"
          + domain
          + "', a report named '"
          + named
          + "'; open a new stream for another domain";
    }
    return null;
  }

  // Caller holds the lock.
  private StreamBucket bucket(BucketId id, DomainConfig config) {
    String name = service.planner().name(id.getBucketMap());
    StreamBucket existing = buckets.get(name);
    if (existing != null) {
      return existing;
    }
    BucketPlan plan = service.planner().plan(config, id.getBucketMap());
    if (plan instanceof BucketPlan.Refused refused) {
      service.refused(refused);
    }
    StreamBucket created = new StreamBucket(id, name, plan);
    buckets.put(name, created);
    index(created);
    return created;
  }

  private void index(StreamBucket b) {
    if (b.plan instanceof BucketPlan.Limited plan) {
      plan.policies().forEach(p -> byCounter.put(p.hashKey(), b));
    }
  }

  private void unindex(StreamBucket b) {
    if (b.plan instanceof BucketPlan.Limited plan) {
      plan.policies().forEach(p -> byCounter.remove(p.hashKey(), b));
    }
  }

  /** Returns releases of the counters {@code b} has now and {@code next} does not. */
  private List<QuotaUsage> releasesOf(StreamBucket b, BucketPlan next) {
    if (!(b.plan instanceof BucketPlan.Limited plan)) {
      return List.of();
    }
    Set<String> kept = new HashSet<>();
    if (next instanceof BucketPlan.Limited n) {
      n.policies().forEach(p -> kept.add(p.hashKey()));
    }
    List<QuotaUsage> out = new ArrayList<>();
    for (RateLimitRequest policy : plan.policies()) {
      if (!kept.contains(policy.hashKey())) {
        out.add(QuotaUsage.release(policy, client, service.intervalMillis()));
      }
    }
    return out;
  }

  private BucketAction staticAction(StreamBucket b) {
    RateLimitStrategy.BlanketRule rule = RateLimitStrategy.BlanketRule.DENY_ALL;
    if (b.plan instanceof BucketPlan.Unlimited
        || (b.plan instanceof BucketPlan.Unmatched
            && service.settings().unmatched() == RlqsSettings.Unmatched.ALLOW_ALL)) {
      rule = RateLimitStrategy.BlanketRule.ALLOW_ALL;
    }
    return Assignments.blanket(b.id, rule, service.ttl());
  }

  // Caller holds the lock.
  private void send(List<BucketAction> actions) {
    if (ended || actions.isEmpty()) {
      return;
    }
    for (BucketAction a : actions) {
      StreamBucket b = buckets.get(service.planner().name(a.getBucketId().getBucketMap()));
      if (b != null) {
        b.lastSent = a;
      }
      service.metrics().assignment(Assignments.kindOf(a));
    }
    try {
      proxy.onNext(RateLimitQuotaResponse.newBuilder().addAllBucketAction(actions).build());
      service.responseSent();
    } catch (RuntimeException cancelled) {
      ended = true;
    }
  }

  private static long count(long reported) {
    return reported < 0 || reported > MAX_COUNT ? MAX_COUNT : reported;
  }

  private record Pending(StreamBucket bucket, int index, QuotaUsage usage) {}
}
