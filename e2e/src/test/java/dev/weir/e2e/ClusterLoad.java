package dev.weir.e2e;

import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.Status;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;

/**
 * Steady native-gRPC load on a cluster of {@code weir.jar} processes, as a load balancer would
 * spread it: client threads send {@code GetRateLimits} calls of {@value #ITEMS_PER_CALL} items,
 * round-robin over the nodes currently targeted, at a fixed total pace, and record each call's
 * outcome with the time it was sent. Nine items per call hit keys with a limit no test reaches; the
 * last hits one of a small set of limited keys, whose admissions are counted to measure
 * admission beyond the limit.
 *
 * <p>A call that fails as a whole with {@code UNAVAILABLE} at a node that is not targeted or is
 * draining never reached Weir's rate limiting (the process is gone or its listener closed): it is
 * sent again to a targeted node and counted as redirected, as a client retrying elsewhere would.
 * Any other failure counts every item of the call as failed.
 */
final class ClusterLoad implements AutoCloseable {

  static final int ITEMS_PER_CALL = 10;

  private static final long CALL_DEADLINE_SECONDS = 5;

  /** How many keys the unlimited items spread over: every node owns and forwards some. */
  private static final int SPREAD_KEYS = 10_000;

  /** One call: when it was sent (System.nanoTime), to which node, and how its items ended. */
  record Outcome(long sentNanos, int node, int answered, int failed) {}

  /** One failed item or call: when it was sent and why it failed. */
  record Failure(long sentNanos, String error) {}

  private enum Target {
    ON,
    DRAINING,
    OFF
  }

  private final int nodes;
  private final AtomicReferenceArray<Target> targets;
  private final AtomicReferenceArray<ManagedChannel> channels;
  private final int threads;
  private final long periodNanos;
  private final AtomicBoolean stopping = new AtomicBoolean();
  private final AtomicInteger roundRobin = new AtomicInteger();
  private final List<Thread> workers = new ArrayList<>();
  private final ConcurrentLinkedQueue<Outcome> outcomes = new ConcurrentLinkedQueue<>();
  private final Map<String, AtomicLong> admitted = new ConcurrentHashMap<>();
  private final ConcurrentLinkedQueue<Failure> failures = new ConcurrentLinkedQueue<>();
  private final AtomicLong redirected = new AtomicLong();
  private volatile String limitedPrefix = "none";
  private volatile int limitedKeys = 1;
  private volatile long limit = 1;

  /**
   * Creates the load on {@code grpcPorts} (one node each, all targeted), {@code callsPerSecond}
   * calls in all spread over {@code threads} threads.
   */
  ClusterLoad(List<Integer> grpcPorts, int threads, int callsPerSecond) {
    this.nodes = grpcPorts.size();
    this.targets = new AtomicReferenceArray<>(nodes);
    this.channels = new AtomicReferenceArray<>(nodes);
    for (int i = 0; i < nodes; i++) {
      targets.set(i, Target.ON);
      channels.set(i, channel(grpcPorts.get(i)));
    }
    this.threads = threads;
    this.periodNanos = TimeUnit.SECONDS.toNanos(threads) / callsPerSecond;
  }

  /** Starts the client threads. */
  void start() {
    for (int t = 0; t < threads; t++) {
      Thread worker = new Thread(this::run, "load-" + t);
      worker.setDaemon(true);
      workers.add(worker);
      worker.start();
    }
  }

  /** Sends each call's limited item from now on to one of {@code keys} keys {@code prefix}-n. */
  void limitedKeys(String prefix, int keys, long keyLimit) {
    this.limit = keyLimit;
    this.limitedKeys = keys;
    this.limitedPrefix = prefix;
  }

  /** Returns the name of the limited keys hit now. */
  String limitedPrefix() {
    return limitedPrefix;
  }

  /** Stops sending to {@code node}, as a load balancer does once the node is gone. */
  void off(int node) {
    targets.set(node, Target.OFF);
  }

  /** Keeps sending to {@code node} until it refuses a call, as callers of a draining node do. */
  void draining(int node) {
    targets.set(node, Target.DRAINING);
  }

  /** Sends to {@code node} again, now listening on {@code grpcPort}, over a new channel. */
  void on(int node, int grpcPort) {
    ManagedChannel old = channels.getAndSet(node, channel(grpcPort));
    old.shutdownNow();
    targets.set(node, Target.ON);
  }

  /** Returns every call's outcome so far. */
  List<Outcome> outcomes() {
    return List.copyOf(outcomes);
  }

  /** Returns the calls sent again to another node after their node refused them. */
  long redirected() {
    return redirected.get();
  }

  /** Returns the first failure of every call that had one. */
  List<Failure> failures() {
    return List.copyOf(failures);
  }

  /** Returns how many admissions of the keys named {@code prefix} went beyond their limit. */
  long overAdmitted(String prefix) {
    long over = 0;
    for (Map.Entry<String, AtomicLong> e : admitted.entrySet()) {
      if (e.getKey().startsWith(prefix + "-")) {
        over += Math.max(0, e.getValue().get() - limit);
      }
    }
    return over;
  }

  @Override
  public void close() throws InterruptedException {
    stopping.set(true);
    for (Thread worker : workers) {
      worker.join(TimeUnit.SECONDS.toMillis(CALL_DEADLINE_SECONDS * 2));
    }
    for (int i = 0; i < nodes; i++) {
      channels.get(i).shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  private static ManagedChannel channel(int port) {
    return NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
  }

  private void run() {
    long next = System.nanoTime();
    while (!stopping.get()) {
      long now = System.nanoTime();
      if (next - now > 0) {
        LockSupport.parkNanos(next - now);
      }
      next = Math.max(next + periodNanos, System.nanoTime() - periodNanos);
      String prefix = limitedPrefix;
      String limitedKey = prefix + "-" + spread(ThreadLocalRandom.current().nextInt(limitedKeys));
      send(request(limitedKey, limit), limitedKey);
    }
  }

  private void send(GetRateLimitsReq request, String limitedKey) {
    for (int attempt = 0; attempt < nodes; attempt++) {
      int node = pickTarget();
      if (node < 0) {
        return;
      }
      long sent = System.nanoTime();
      try {
        GetRateLimitsResp resp =
            V1Grpc.newBlockingStub(channels.get(node))
                .withDeadlineAfter(CALL_DEADLINE_SECONDS, TimeUnit.SECONDS)
                .getRateLimits(request);
        record(sent, node, resp, limitedKey);
        return;
      } catch (StatusRuntimeException e) {
        Target state = targets.get(node);
        if (e.getStatus().getCode() == io.grpc.Status.Code.UNAVAILABLE && state != Target.ON) {
          targets.set(node, Target.OFF);
          redirected.incrementAndGet();
          continue;
        }
        failures.add(new Failure(sent, "call to node " + node + " failed: " + e.getStatus()));
        outcomes.add(new Outcome(sent, node, 0, ITEMS_PER_CALL));
        return;
      }
    }
  }

  private int pickTarget() {
    for (int i = 0; i < nodes; i++) {
      int node = Math.floorMod(roundRobin.getAndIncrement(), nodes);
      if (targets.get(node) != Target.OFF) {
        return node;
      }
    }
    return -1;
  }

  private void record(long sent, int node, GetRateLimitsResp resp, String limitedKey) {
    int failed = 0;
    for (RateLimitResp r : resp.getResponsesList()) {
      if (!r.getError().isEmpty()) {
        if (failed == 0) {
          failures.add(new Failure(sent, "at node " + node + ": " + r.getError()));
        }
        failed++;
      }
    }
    RateLimitResp limited = resp.getResponses(ITEMS_PER_CALL - 1);
    if (limited.getError().isEmpty() && limited.getStatus() == Status.UNDER_LIMIT) {
      admitted.computeIfAbsent(limitedKey, k -> new AtomicLong()).incrementAndGet();
    }
    outcomes.add(new Outcome(sent, node, ITEMS_PER_CALL - failed, failed));
  }

  /**
   * Returns a key for number {@code i} that differs from its neighbours in its first characters:
   * FNV-1a, the ring's hash, puts keys that differ only at the end close together on the ring.
   */
  private static String spread(int i) {
    return Integer.toHexString((i + 1) * 0x9E3779B9) + "-" + i;
  }

  private static GetRateLimitsReq request(String limitedKey, long limit) {
    GetRateLimitsReq.Builder req = GetRateLimitsReq.newBuilder();
    ThreadLocalRandom random = ThreadLocalRandom.current();
    for (int i = 0; i < ITEMS_PER_CALL - 1; i++) {
      req.addRequests(
          RateLimitReq.newBuilder()
              .setName("load")
              .setUniqueKey(spread(random.nextInt(SPREAD_KEYS)))
              .setHits(1)
              .setLimit(1_000_000)
              .setDuration(60_000));
    }
    req.addRequests(
        RateLimitReq.newBuilder()
            .setName("limited")
            .setUniqueKey(limitedKey)
            .setHits(1)
            .setLimit(limit)
            .setDuration(600_000));
    return req.build();
  }
}
