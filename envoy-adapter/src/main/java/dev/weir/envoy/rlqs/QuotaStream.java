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
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * One proxy's {@code StreamRateLimitQuotas} stream: takes its usage reports, sends the usage of
 * each counter its limited buckets count on to the counter's owner and answers every report with
 * the bucket actions of the buckets it named; sends the shares owners push, a config reload's
 * consequences, and at the end releases the proxy's shares.
 *
 * <p>Buckets whose plans share a counter (a {@code share_threshold} wildcard gives their values
 * one counter key) are one proxy to the owner: their usage of a report is summed into one usage of
 * the counter, and the proxy's one share of it is split among them ({@link StreamCounter#partOf});
 * a new share of the counter, answered or pushed, reassigns every bucket on it.
 *
 * <p>Envoy's filter keeps a bucket, and reports it, until the server abandons it: a bucket that has
 * gone {@link RlqsSettings#idleAfter} without a report of requests is abandoned at a later report
 * of the stream (idle buckets are looked for at most twice per report interval, so a report does
 * not cost a pass over every bucket), and the proxy's shares of the counters it leaves without
 * buckets are released, so neither the stream nor the owners keep idle buckets. A stream holds at
 * most {@link RlqsSettings#maxBuckets} buckets, and the node's streams together at most {@link
 * RlqsSettings#maxNodeBucketBytes} bytes of buckets: a new bucket beyond them is answered
 * without being held ({@link #notHeld}).
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
  private final Map<String, StreamCounter> counters = new HashMap<>();
  private String domain;
  private boolean ended;
  private boolean released;
  private boolean idleScanned;
  private long lastIdleScanNanos;
  private long idleScans;

  QuotaStream(RlqsService service, StreamObserver<RateLimitQuotaResponse> proxy, String client) {
    this.service = service;
    this.proxy = proxy;
    this.client = client;
  }

  /** Returns the stream's client name, as owners know it. */
  String client() {
    return client;
  }

  /** Returns how many buckets the stream holds. */
  synchronized int heldBuckets() {
    return buckets.size();
  }

  /** Returns how many times the stream looked for idle buckets. */
  synchronized long idleScans() {
    return idleScans;
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
    Map<StreamCounter, long[]> reported = new LinkedHashMap<>();
    List<QuotaUsage> releases = new ArrayList<>();
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
    service.takingBuckets();
    synchronized (this) {
      if (ended) {
        return;
      }
      DomainConfig config = service.domainConfig(domain);
      if (config == null) {
        service.unknownDomain(domain);
      }
      long nanos = service.clock().monotonicNanos();
      long idleNanos = service.settings().idleAfter().toNanos();
      for (BucketQuotaUsage usage : reports.getBucketQuotaUsagesList()) {
        Map<String, String> entries = usage.getBucketId().getBucketMap();
        if (entries.isEmpty()) {
          continue;
        }
        long allowed = count(usage.getNumRequestsAllowed());
        long denied = count(usage.getNumRequestsDenied());
        service.metrics().usageReport(allowed, denied);
        StreamBucket bucket = bucket(usage.getBucketId(), config, nanos);
        if (bucket == null) {
          now.add(notHeld(usage.getBucketId(), config));
          continue;
        }
        long elapsed =
            bucket.lastReportNanos == 0
                ? elapsedMillis(usage.getTimeElapsed())
                : Math.min(
                    QuotaUsage.MAX_ELAPSED_MILLIS, (nanos - bucket.lastReportNanos) / 1_000_000);
        bucket.lastReportNanos = nanos;
        bucket.measure(allowed + denied, elapsed, nanos);
        if (bucket.idle(nanos, idleNanos)) {
          continue;
        }
        if (bucket.plan instanceof BucketPlan.Limited) {
          limited.add(bucket);
          for (StreamCounter c : bucket.counters()) {
            long[] sums = reported.computeIfAbsent(c, k -> new long[3]);
            sums[0] = Math.min(MAX_COUNT, sums[0] + allowed);
            sums[1] = Math.min(MAX_COUNT, sums[1] + denied);
            sums[2] = Math.max(sums[2], elapsed);
          }
        } else {
          now.add(staticAction(bucket));
        }
      }
      if (!idleScanned || nanos - lastIdleScanNanos >= idleScanNanos()) {
        idleScanned = true;
        lastIdleScanNanos = nanos;
        abandonIdle(nanos, idleNanos, releases);
      }
      for (Map.Entry<StreamCounter, long[]> e : reported.entrySet()) {
        StreamCounter c = e.getKey();
        long[] sums = e.getValue();
        // The usage covers the longest time of any one of its buckets, each measured from its own
        // last report: a new bucket reported alone covers no time (the owner keeps the demand),
        // and does not shorten the time of the next report of the others.
        pending.add(
            new Pending(
                c,
                new QuotaUsage(
                    c.policy, client, sums[0], sums[1], sums[2], service.intervalMillis(), false)));
      }
    }
    releases.forEach(service::report);
    if (pending.isEmpty()) {
      answer(now, List.of());
      return;
    }
    reportThenAnswer(pending, now, limited);
  }

  /** Returns the least time between two looks for idle buckets: half the report interval. */
  private long idleScanNanos() {
    return service.settings().reportInterval().toNanos() / 2;
  }

  /**
   * Abandons every bucket that has gone {@code idleNanos} without a report of requests at {@code
   * nanos}, whether the proxy still reports it or not: sends the proxy their {@code abandon_action}
   * now, forgets them, and adds to {@code releases} the proxy's shares of the counters no bucket of
   * the stream is left on. A later report of such a bucket subscribes it anew. Caller holds the
   * lock.
   */
  private void abandonIdle(long nanos, long idleNanos, List<QuotaUsage> releases) {
    idleScans++;
    List<BucketAction> abandons = new ArrayList<>();
    Map<String, StreamCounter> emptied = new LinkedHashMap<>();
    for (Iterator<StreamBucket> it = buckets.values().iterator(); it.hasNext(); ) {
      StreamBucket b = it.next();
      if (b.idle(nanos, idleNanos)) {
        detach(b, emptied);
        it.remove();
        service.heldBytes().give(b.bytes);
        abandons.add(Assignments.abandon(b.id));
      }
    }
    for (StreamCounter c : emptied.values()) {
      releases.add(release(c));
    }
    send(abandons);
  }

  /**
   * Reports each of {@code pending}'s usages to its owner, takes the shares answered into their
   * counters, and then sends {@code actions} with the current actions of {@code limited} and the
   * changed actions of the other buckets on their counters. A share answered for a counter the
   * stream no longer holds (it ended, or the counter's buckets were abandoned, while the usage was
   * on its way) is released again, as the owner counted the proxy anew after its release, unless a
   * counter of the same key is held by then (a bucket came back): the owner's record is its own.
   * The release is sent outside the stream's lock (reporting under it could deadlock with other
   * streams), so a bucket that comes back in between may see its counter's first report reach the
   * owner before the release, which then drops the proxy until its next report: an accepted window
   * of one report interval.
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
                    QuotaUsage late;
                    synchronized (this) {
                      StreamCounter held = counters.get(p.counter().key());
                      if (held == p.counter()) {
                        p.counter().accept(share, true, service.clock().wallMillis());
                        return;
                      }
                      if (held != null) {
                        return;
                      }
                      late = release(p.counter());
                    }
                    service.report(late);
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

  /**
   * Sends {@code actions}, the current actions of {@code limited} buckets and the actions of the
   * other buckets on their counters that changed (their parts of a share moved) as one response.
   */
  private synchronized void answer(List<BucketAction> actions, List<StreamBucket> limited) {
    List<BucketAction> all = new ArrayList<>(actions);
    Set<StreamBucket> named = new LinkedHashSet<>(limited);
    Set<StreamCounter> counted = new LinkedHashSet<>();
    for (StreamBucket b : named) {
      if (buckets.get(b.name) != b) {
        continue;
      }
      b.limitedAction(service.ttl()).ifPresent(all::add);
      counted.addAll(b.counters());
    }
    Set<StreamBucket> others = new LinkedHashSet<>();
    for (StreamCounter c : counted) {
      others.addAll(c.buckets());
    }
    others.removeAll(named);
    all.addAll(changedActions(others));
    send(all);
  }

  /** Returns the actions of {@code of} that differ from the last sent to the proxy. */
  private List<BucketAction> changedActions(Iterable<StreamBucket> of) {
    List<BucketAction> out = new ArrayList<>();
    for (StreamBucket b : of) {
      b.limitedAction(service.ttl()).filter(a -> !a.equals(b.lastSent)).ifPresent(out::add);
    }
    return out;
  }

  /** Takes pushed shares of this stream's buckets; returns how many were for a bucket here. */
  synchronized int deliver(List<QuotaPush> pushes) {
    if (ended) {
      return 0;
    }
    int known = 0;
    Set<StreamBucket> changed = new LinkedHashSet<>();
    for (QuotaPush p : pushes) {
      StreamCounter counter = counters.get(p.key());
      if (counter == null) {
        continue;
      }
      known++;
      if (counter.accept(p.share(), false, service.clock().wallMillis())) {
        changed.addAll(counter.buckets());
      }
    }
    send(changedActions(changed));
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
      Map<String, StreamCounter> emptied = new LinkedHashMap<>();
      Set<StreamCounter> touched = new LinkedHashSet<>();
      for (StreamBucket b : List.copyOf(buckets.values())) {
        BucketPlan next = service.planner().plan(config, b.id.getBucketMap());
        if (next.equals(b.plan)) {
          continue;
        }
        detach(b, emptied);
        if (next instanceof BucketPlan.Unmatched && !(b.plan instanceof BucketPlan.Unmatched)) {
          buckets.remove(b.name);
          service.heldBytes().give(b.bytes);
          now.add(Assignments.abandon(b.id));
          continue;
        }
        b.replan(next);
        attach(b);
        if (next instanceof BucketPlan.Limited) {
          asked.add(b);
          touched.addAll(b.counters());
        } else {
          now.add(staticAction(b));
        }
      }
      for (StreamCounter c : emptied.values()) {
        if (!counters.containsKey(c.key())) {
          releases.add(release(c));
        }
      }
      for (StreamCounter c : touched) {
        asks.add(new Pending(c, ask(c)));
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
      for (StreamCounter c : counters.values()) {
        releases.add(release(c));
      }
      for (StreamBucket b : buckets.values()) {
        service.heldBytes().give(b.bytes);
      }
      buckets.clear();
      counters.clear();
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

  /**
   * Returns the stream's bucket of {@code id}, made now if it is new, or null, counted and logged,
   * when it is new and the stream holds {@link RlqsSettings#maxBuckets} already or the node's
   * streams hold too many bytes of buckets to take its own ({@link
   * RlqsSettings#maxNodeBucketBytes}). Caller holds the lock.
   */
  private StreamBucket bucket(BucketId id, DomainConfig config, long nanos) {
    String name = service.planner().name(id.getBucketMap());
    StreamBucket existing = buckets.get(name);
    if (existing != null) {
      return existing;
    }
    if (buckets.size() >= service.settings().maxBuckets()) {
      service.bucketNotHeld(buckets.size());
      return null;
    }
    BucketPlan plan = service.planner().plan(config, id.getBucketMap());
    long bytes = HeldBucketBytes.of(id, name);
    if (!service.heldBytes().take(bytes)) {
      service.bucketNotHeldOnTheNode(bytes);
      return null;
    }
    if (plan instanceof BucketPlan.Refused refused) {
      service.refused(refused, domain, client);
    }
    StreamBucket created = new StreamBucket(id, name, plan, nanos, bytes);
    buckets.put(name, created);
    attach(created);
    return created;
  }

  /**
   * Puts a limited {@code b} on the stream's counters of its policies, making those it is the first
   * on; a counter whose policy changed forgets its share. Caller holds the lock.
   */
  private void attach(StreamBucket b) {
    if (!(b.plan instanceof BucketPlan.Limited plan)) {
      return;
    }
    List<StreamCounter> of = new ArrayList<>(plan.policies().size());
    for (RateLimitRequest policy : plan.policies()) {
      StreamCounter c = counters.computeIfAbsent(policy.hashKey(), k -> new StreamCounter(policy));
      c.repolicy(policy);
      c.add(b);
      of.add(c);
    }
    b.counters(of);
  }

  /**
   * Takes {@code b} off its counters; those left without buckets are dropped from the stream and
   * put in {@code emptied}, for the caller to release. Caller holds the lock.
   */
  private void detach(StreamBucket b, Map<String, StreamCounter> emptied) {
    for (StreamCounter c : b.counters()) {
      c.remove(b);
      if (c.buckets().isEmpty() && counters.remove(c.key(), c)) {
        emptied.put(c.key(), c);
      }
    }
    b.counters(List.of());
  }

  /**
   * Returns the answer to a new bucket the stream does not hold ({@link #bucket}): {@code
   * DENY_ALL} when its rule has a limit (so the limit holds without counting it; {@code ALLOW_ALL}
   * in shadow mode), else the blanket rule it would get when held. Caller holds the lock.
   */
  private BucketAction notHeld(BucketId id, DomainConfig config) {
    BucketPlan plan = service.planner().plan(config, id.getBucketMap());
    if (plan instanceof BucketPlan.Limited limited) {
      return Assignments.blanket(
          id,
          limited.shadow()
              ? RateLimitStrategy.BlanketRule.ALLOW_ALL
              : RateLimitStrategy.BlanketRule.DENY_ALL,
          service.ttl());
    }
    return staticAction(id, plan);
  }

  private BucketAction staticAction(StreamBucket b) {
    return staticAction(b.id, b.plan);
  }

  private BucketAction staticAction(BucketId id, BucketPlan plan) {
    RateLimitStrategy.BlanketRule rule = RateLimitStrategy.BlanketRule.DENY_ALL;
    if (plan instanceof BucketPlan.Unlimited
        || (plan instanceof BucketPlan.Unmatched
            && service.settings().unmatched() == RlqsSettings.Unmatched.ALLOW_ALL)) {
      rule = RateLimitStrategy.BlanketRule.ALLOW_ALL;
    }
    return Assignments.blanket(id, rule, service.ttl());
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

  /** Returns the release of the proxy's share of {@code c}. */
  private QuotaUsage release(StreamCounter c) {
    return QuotaUsage.release(c.policy, client, service.intervalMillis());
  }

  /** Returns a usage without counts of {@code c}, asking its owner for the proxy's share. */
  private QuotaUsage ask(StreamCounter c) {
    return new QuotaUsage(c.policy, client, 0, 0, 0, service.intervalMillis(), false);
  }

  /**
   * Returns the milliseconds of a reported {@code time_elapsed}, within 0 and {@link
   * QuotaUsage#MAX_ELAPSED_MILLIS} (the most an owner accepts from a peer), so that local and
   * remote owners count a bucket's first report alike.
   */
  static long elapsedMillis(com.google.protobuf.Duration reported) {
    long seconds = reported.getSeconds();
    if (seconds < 0) {
      return 0;
    }
    if (seconds >= QuotaUsage.MAX_ELAPSED_MILLIS / 1000) {
      return QuotaUsage.MAX_ELAPSED_MILLIS;
    }
    int nanos = Math.max(0, Math.min(999_999_999, reported.getNanos()));
    return Math.min(QuotaUsage.MAX_ELAPSED_MILLIS, seconds * 1000 + nanos / 1_000_000);
  }

  private static long count(long reported) {
    return reported < 0 || reported > MAX_COUNT ? MAX_COUNT : reported;
  }

  private record Pending(StreamCounter counter, QuotaUsage usage) {}
}
