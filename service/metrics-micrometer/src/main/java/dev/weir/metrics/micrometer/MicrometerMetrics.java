package dev.weir.metrics.micrometer;

import dev.weir.core.metrics.CheckResult;
import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.core.store.CacheStatistics;
import io.grpc.Status;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * {@link WeirMetrics} as Micrometer meters in one {@link MeterRegistry}. Meter names are listed as
 * constants; in Prometheus they appear with dots as underscores, counters with {@code _total} and
 * timers with {@code _seconds_*}, e.g. {@code weir_grpc_requests_seconds_count}.
 *
 * <p>Timers publish fixed latency buckets (0.5 ms to 1 s) so dashboards can compute percentiles
 * across nodes with {@code histogram_quantile}.
 *
 * <p>A peer's meters exist from its first {@code watchPeer*} call until {@link #forgetPeer}:
 * batches sent to it and its being found down are dropped at any other time, so an event about a
 * peer that already left (a batch that was in flight, its take-down one batch timeout after its
 * leave notice) brings back no series.
 */
public final class MicrometerMetrics implements WeirMetrics {

  /** gRPC calls by {@code method} and {@code code}. */
  public static final String GRPC_REQUESTS = "weir.grpc.requests";

  /** HTTP requests by {@code route} and {@code status}. */
  public static final String HTTP_REQUESTS = "weir.http.requests";

  /** HTTP requests being answered. */
  public static final String HTTP_IN_FLIGHT = "weir.http.in.flight";

  /** HTTP connections open. */
  public static final String HTTP_CONNECTIONS = "weir.http.connections";

  /** Rate-limit items answered, by {@code result}. */
  public static final String CHECKS = "weir.checks";

  /** {@code check} calls in flight. */
  public static final String CHECKS_IN_FLIGHT = "weir.checks.in.flight";

  /** Answers over the limit per rule, counted by the server's over-limit rule meter. */
  public static final String OVER_LIMIT_DECISIONS = "weir.over_limit.decisions";

  /** Requests refused, by {@code reason}. */
  public static final String REQUESTS_REFUSED = "weir.requests.refused";

  /** Buckets held in memory. */
  public static final String CACHE_SIZE = "weir.cache.size";

  /** Bucket store reads and updates, by {@code type} ({@code hit} or {@code miss}). */
  public static final String CACHE_ACCESS = "weir.cache.access";

  /** Unexpired buckets evicted because the store was full. */
  public static final String CACHE_UNEXPIRED_EVICTIONS = "weir.cache.unexpired.evictions";

  /** Items per batch sent to a peer, by {@code peer}. */
  public static final String BATCH_SIZE = "weir.batch.size";

  /** Batch send latency, by {@code peer} and {@code outcome}. */
  public static final String BATCH_SEND = "weir.batch.send";

  /** GLOBAL hits waiting to be sent to their owners. */
  public static final String GLOBAL_SEND_QUEUE = "weir.global.send.queue.length";

  /** GLOBAL bucket states waiting to be broadcast. */
  public static final String GLOBAL_BROADCAST_QUEUE = "weir.global.broadcast.queue.length";

  /** GLOBAL items (a key's summed hits or reset) dropped without their owner confirming them. */
  public static final String GLOBAL_HITS_DROPPED = "weir.global.hits.dropped";

  /** GLOBAL hit sends to owners, by {@code outcome}. */
  public static final String GLOBAL_SEND = "weir.global.send";

  /** GLOBAL broadcasts, by {@code outcome}. */
  public static final String GLOBAL_BROADCAST = "weir.global.broadcast";

  /** Forwarding batches sent to a peer, by {@code peer}. */
  public static final String PEER_BATCHES = "weir.peer.batches";

  /** Items forwarded to a peer, by {@code peer}. */
  public static final String PEER_BATCH_ITEMS = "weir.peer.batch.items";

  /** Buckets handed off, by {@code direction} ({@code sent} or {@code received}). */
  public static final String HANDOFF_BUCKETS = "weir.handoff.buckets";

  /** Peers in the cluster, this node included. */
  public static final String PEERS = "weir.peers";

  /** Discovery failures, by {@code mechanism}. */
  public static final String DISCOVERY_ERRORS = "weir.discovery.errors";

  /** 1 while discovery works, 0 while it reports a problem, by {@code mechanism}. */
  public static final String DISCOVERY_HEALTHY = "weir.discovery.healthy";

  /** Gauge per peer: 1 while it answers, 0 while it is down. */
  public static final String PEER_UP = "weir.peer.up";

  /** Counter per peer: the times it was found down. */
  public static final String PEER_DOWN = "weir.peer.down";

  /** Counter of this node's ring changes. */
  public static final String RING_CHANGES = "weir.ring.changes";

  /** Forwarded items this node answered itself because their owner had not answered in time. */
  public static final String FORWARD_STAND_INS = "weir.forward.stand.ins";

  private static final Duration[] LATENCY_BUCKETS = {
    Duration.ofNanos(500_000),
    Duration.ofMillis(1),
    Duration.ofNanos(2_500_000),
    Duration.ofMillis(5),
    Duration.ofMillis(10),
    Duration.ofMillis(25),
    Duration.ofMillis(50),
    Duration.ofMillis(100),
    Duration.ofMillis(250),
    Duration.ofMillis(500),
    Duration.ofSeconds(1)
  };

  private static final Status.Code[] GRPC_CODES = Status.Code.values();

  private static final int HTTP_STATUS_MIN = 100;
  private static final int HTTP_STATUS_MAX = 599;

  private final MeterRegistry registry;

  /**
   * The gRPC call timers by method, each an array by status code filled on first use; methods are
   * the server's own (or {@code unknown}), so the map stays small. A lost race registers the same
   * timer twice, which Micrometer answers with the one meter.
   */
  private final Map<String, Timer[]> grpcTimers = new ConcurrentHashMap<>();

  /**
   * The HTTP request timers by route, each an array by status code (100 to 599) filled on first
   * use; routes are the server's known ones, matched exactly, so the map stays small. A lost race
   * registers the same timer twice, which Micrometer answers with the one meter.
   */
  private final Map<String, Timer[]> httpTimers = new ConcurrentHashMap<>();

  /** The GLOBAL send and broadcast timers by outcome (success, failure), made on first use. */
  private final Timer[] globalSendTimers = new Timer[2];

  private final Timer[] globalBroadcastTimers = new Timer[2];

  /** The discovery error counters by mechanism ({@code etcd}, {@code k8s}, {@code dns}). */
  private final Map<String, Counter> discoveryErrors = new ConcurrentHashMap<>();

  /** The meters of each watched peer, from its first {@code watchPeer*} call to its forgetting. */
  private final Map<String, PeerMeters> peers = new ConcurrentHashMap<>();

  /**
   * The suppliers behind function counters: Micrometer holds a function counter's source weakly (a
   * gauge can be told otherwise, a function counter cannot), and a lambda nobody else keeps would be
   * collected, after which the counter reads nothing.
   */
  private final List<LongSupplier> functionCounterSources = new CopyOnWriteArrayList<>();
  private final Map<CheckResult, Counter> checks = new EnumMap<>(CheckResult.class);
  private final Map<RefusalReason, Counter> refusals = new EnumMap<>(RefusalReason.class);
  private final Counter standIns;
  private final Counter ringChanges;

  /** Creates the metrics in {@code registry}, registering the fixed counters at zero. */
  public MicrometerMetrics(MeterRegistry registry) {
    this.registry = Objects.requireNonNull(registry, "registry");
    for (CheckResult result : CheckResult.values()) {
      checks.put(
          result,
          Counter.builder(CHECKS)
              .description("Rate-limit items answered")
              .tag("result", result.label())
              .register(registry));
    }
    for (RefusalReason reason : RefusalReason.values()) {
      refusals.put(
          reason,
          Counter.builder(REQUESTS_REFUSED)
              .description("Requests refused before any bucket was touched")
              .tag("reason", reason.label())
              .register(registry));
    }
    standIns =
        Counter.builder(FORWARD_STAND_INS)
            .description(
                "Forwarded items this node answered itself because their owner had not answered"
                    + " within WEIR_FORWARD_STAND_IN_AFTER")
            .register(registry);
    ringChanges =
        Counter.builder(RING_CHANGES)
            .description("Times this node's ring changed (a peer added or taken off)")
            .register(registry);
  }

  /** Returns the registry, for components that add meters of their own. */
  public MeterRegistry registry() {
    return registry;
  }

  @Override
  public void grpcCall(String method, Status.Code code, long nanos) {
    Timer[] byCode = grpcTimers.get(method);
    if (byCode == null) {
      byCode = grpcTimers.computeIfAbsent(method, m -> new Timer[GRPC_CODES.length]);
    }
    Timer timer = byCode[code.ordinal()];
    if (timer == null) {
      timer = latency(GRPC_REQUESTS, "gRPC calls", "method", method, "code", code.name());
      byCode[code.ordinal()] = timer;
    }
    timer.record(nanos, TimeUnit.NANOSECONDS);
  }

  @Override
  public void httpRequest(String route, int status, long nanos) {
    if (status < HTTP_STATUS_MIN || status > HTTP_STATUS_MAX) {
      httpTimer(route, status).record(nanos, TimeUnit.NANOSECONDS);
      return;
    }
    Timer[] byStatus = httpTimers.get(route);
    if (byStatus == null) {
      byStatus =
          httpTimers.computeIfAbsent(route, r -> new Timer[HTTP_STATUS_MAX - HTTP_STATUS_MIN + 1]);
    }
    Timer timer = byStatus[status - HTTP_STATUS_MIN];
    if (timer == null) {
      timer = httpTimer(route, status);
      byStatus[status - HTTP_STATUS_MIN] = timer;
    }
    timer.record(nanos, TimeUnit.NANOSECONDS);
  }

  private Timer httpTimer(String route, int status) {
    return latency(
        HTTP_REQUESTS, "HTTP requests", "route", route, "status", Integer.toString(status));
  }

  @Override
  public void checked(CheckResult result) {
    checks.get(result).increment();
  }

  @Override
  public void refused(RefusalReason reason) {
    refusals.get(reason).increment();
  }

  @Override
  public void watchChecksInFlight(LongSupplier inFlight) {
    gauge(CHECKS_IN_FLIGHT, "check calls in flight", inFlight);
  }

  @Override
  public void watchHttpInFlight(LongSupplier inFlight) {
    gauge(HTTP_IN_FLIGHT, "HTTP requests being answered", inFlight);
  }

  @Override
  public void watchHttpConnections(LongSupplier open) {
    gauge(HTTP_CONNECTIONS, "HTTP connections open", open);
  }

  @Override
  public void watchCache(CacheStatistics cache) {
    gauge(CACHE_SIZE, "Buckets held in memory", cache::size);
    FunctionCounter.builder(CACHE_ACCESS, cache, CacheStatistics::hitCount)
        .description("Bucket store reads and updates")
        .tag("type", "hit")
        .register(registry);
    FunctionCounter.builder(CACHE_ACCESS, cache, CacheStatistics::missCount)
        .description("Bucket store reads and updates")
        .tag("type", "miss")
        .register(registry);
    FunctionCounter.builder(CACHE_UNEXPIRED_EVICTIONS, cache, CacheStatistics::evictionCount)
        .description("Unexpired buckets evicted because the store was full")
        .register(registry);
  }

  @Override
  public void batchSent(String peer, int size, long nanos, boolean ok) {
    PeerMeters watched = peers.get(peer);
    BatchMeters meters = watched == null ? null : watched.batches(this::batchMeters);
    if (meters == null) {
      return;
    }
    meters.size.record(size);
    (ok ? meters.sent : meters.failed).record(nanos, TimeUnit.NANOSECONDS);
  }

  private BatchMeters batchMeters(String peer) {
    return new BatchMeters(
        DistributionSummary.builder(BATCH_SIZE)
            .description("Items per batch sent to a peer")
            .tag("peer", peer)
            .register(registry),
        latency(BATCH_SEND, "Batch sends to a peer", "peer", peer, "outcome", outcome(true)),
        latency(BATCH_SEND, "Batch sends to a peer", "peer", peer, "outcome", outcome(false)));
  }

  /** The meters of the batches sent to one peer, registered once. */
  private record BatchMeters(DistributionSummary size, Timer sent, Timer failed) {}

  /**
   * One watched peer's meters registered on first use and the suppliers of its function counters
   * (see {@link #functionCounterSources}); once forgotten it registers nothing more, so a meter
   * removed by {@link #forgetPeer} is not registered again by an event that raced with it.
   */
  private static final class PeerMeters {
    private final String peer;
    private final List<LongSupplier> counterSources = new CopyOnWriteArrayList<>();
    private volatile BatchMeters batches;
    private volatile Counter down;
    private boolean forgotten;

    PeerMeters(String peer) {
      this.peer = peer;
    }

    /** Runs {@code registration} unless this peer was forgotten. */
    synchronized void register(Runnable registration) {
      if (!forgotten) {
        registration.run();
      }
    }

    /** Returns the batch meters, registered by {@code create} on first use; null once forgotten. */
    BatchMeters batches(Function<String, BatchMeters> create) {
      BatchMeters meters = batches;
      if (meters != null) {
        return meters;
      }
      synchronized (this) {
        if (batches == null && !forgotten) {
          batches = create.apply(peer);
        }
        return batches;
      }
    }

    /** Returns the down counter, registered by {@code create} on first use; null once forgotten. */
    Counter down(Function<String, Counter> create) {
      Counter counter = down;
      if (counter != null) {
        return counter;
      }
      synchronized (this) {
        if (down == null && !forgotten) {
          down = create.apply(peer);
        }
        return down;
      }
    }

    /** Stops every later registration for this peer. */
    synchronized void forget() {
      forgotten = true;
    }
  }

  @Override
  public void watchGlobalQueues(LongSupplier hitsQueued, LongSupplier broadcastsQueued) {
    gauge(GLOBAL_SEND_QUEUE, "GLOBAL hits waiting for their owners", hitsQueued);
    gauge(GLOBAL_BROADCAST_QUEUE, "GLOBAL states waiting for broadcast", broadcastsQueued);
  }

  @Override
  public void watchGlobalDropped(LongSupplier dropped) {
    functionCounter(
        GLOBAL_HITS_DROPPED,
        "GLOBAL items (a key's summed hits or its reset) dropped without their owner confirming"
            + " them",
        dropped);
  }

  @Override
  public void globalSend(long nanos, boolean ok) {
    outcomeTimer(globalSendTimers, GLOBAL_SEND, "GLOBAL hit sends to owners", ok)
        .record(nanos, TimeUnit.NANOSECONDS);
  }

  @Override
  public void globalBroadcast(long nanos, boolean ok) {
    outcomeTimer(globalBroadcastTimers, GLOBAL_BROADCAST, "GLOBAL broadcasts to peers", ok)
        .record(nanos, TimeUnit.NANOSECONDS);
  }

  /** Returns {@code timers}' timer for {@code ok}, registered on first use (a lost race is fine). */
  private Timer outcomeTimer(Timer[] timers, String name, String description, boolean ok) {
    int i = ok ? 0 : 1;
    Timer timer = timers[i];
    if (timer == null) {
      timer = latency(name, description, "outcome", outcome(ok));
      timers[i] = timer;
    }
    return timer;
  }

  @Override
  public void watchHandOff(LongSupplier sent, LongSupplier received) {
    functionCounter(HANDOFF_BUCKETS, "Buckets handed off between nodes", sent, "direction", "sent");
    functionCounter(
        HANDOFF_BUCKETS, "Buckets handed off between nodes", received, "direction", "received");
  }

  @Override
  public void watchPeerBatches(String peer, LongSupplier batches, LongSupplier items) {
    PeerMeters watched = peers.computeIfAbsent(peer, PeerMeters::new);
    watched.register(
        () -> {
          watched.counterSources.add(batches);
          watched.counterSources.add(items);
          register(PEER_BATCHES, "Forwarding batches sent to a peer", batches, "peer", peer);
          register(PEER_BATCH_ITEMS, "Items forwarded to a peer", items, "peer", peer);
        });
  }

  @Override
  public void forgetPeer(String peer) {
    PeerMeters watched = peers.remove(peer);
    if (watched != null) {
      watched.forget();
    }
    for (String name :
        List.of(BATCH_SIZE, BATCH_SEND, PEER_BATCHES, PEER_BATCH_ITEMS, PEER_UP, PEER_DOWN)) {
      for (Meter meter : registry.find(name).tag("peer", peer).meters()) {
        registry.remove(meter);
      }
    }
  }

  private void functionCounter(
      String name, String description, LongSupplier value, String... tags) {
    functionCounterSources.add(value);
    register(name, description, value, tags);
  }

  private void register(String name, String description, LongSupplier value, String... tags) {
    FunctionCounter.builder(name, value, supplier -> supplier.getAsLong())
        .description(description)
        .tags(tags)
        .register(registry);
  }


  @Override
  public void watchPeerCount(LongSupplier peers) {
    gauge(PEERS, "Peers in the cluster, this node included", peers);
  }

  @Override
  public void discoveryError(String mechanism) {
    Counter counter = discoveryErrors.get(mechanism);
    if (counter == null) {
      counter =
          discoveryErrors.computeIfAbsent(
              mechanism,
              m ->
                  Counter.builder(DISCOVERY_ERRORS)
                      .description("Peer discovery failures")
                      .tag("mechanism", m)
                      .register(registry));
    }
    counter.increment();
  }

  @Override
  public void watchDiscoveryHealth(String mechanism, BooleanSupplier healthy) {
    Gauge.builder(DISCOVERY_HEALTHY, healthy, supplier -> supplier.getAsBoolean() ? 1 : 0)
        .description("1 while peer discovery works, 0 while it reports a problem")
        .tag("mechanism", mechanism)
        .strongReference(true)
        .register(registry);
  }

  @Override
  public void watchPeerUp(String peer, BooleanSupplier up) {
    PeerMeters watched = peers.computeIfAbsent(peer, PeerMeters::new);
    watched.register(
        () ->
            Gauge.builder(PEER_UP, up, supplier -> supplier.getAsBoolean() ? 1 : 0)
                .description("1 while the peer answers, 0 while it is found down")
                .tag("peer", peer)
                .strongReference(true)
                .register(registry));
  }

  @Override
  public void standIn() {
    standIns.increment();
  }

  @Override
  public void ringChanged() {
    ringChanges.increment();
  }

  @Override
  public void peerDown(String peer) {
    PeerMeters watched = peers.get(peer);
    Counter down = watched == null ? null : watched.down(this::downCounter);
    if (down != null) {
      down.increment();
    }
  }

  private Counter downCounter(String peer) {
    return Counter.builder(PEER_DOWN)
        .description("Times the peer was found down")
        .tag("peer", peer)
        .register(registry);
  }

  private Timer latency(String name, String description, String... tags) {
    return Timer.builder(name)
        .description(description)
        .tags(tags)
        .serviceLevelObjectives(LATENCY_BUCKETS)
        .register(registry);
  }

  private void gauge(String name, String description, LongSupplier value) {
    Gauge.builder(name, value, supplier -> supplier.getAsLong())
        .description(description)
        .strongReference(true)
        .register(registry);
  }

  private static String outcome(boolean ok) {
    return ok ? "success" : "failure";
  }
}
