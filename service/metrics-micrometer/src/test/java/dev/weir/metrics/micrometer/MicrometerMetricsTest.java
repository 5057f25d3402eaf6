package dev.weir.metrics.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.metrics.CheckResult;
import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.store.CacheStatistics;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class MicrometerMetricsTest {

  private final PrometheusMeterRegistry registry =
      new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final MicrometerMetrics metrics = new MicrometerMetrics(registry);

  private record Stats(long size, long hitCount, long missCount, long evictionCount)
      implements CacheStatistics {}

  @Test
  void newMetrics_fixedCountersExposedAtZero() {
    String text = registry.scrape();

    assertThat(text)
        .contains("weir_checks_total{result=\"over_limit\"} 0.0")
        .contains("weir_requests_refused_total{reason=\"field_too_long\"} 0.0");
  }

  @Test
  void events_scrape_namesLabelsAndValues() {
    metrics.grpcCall("pb.gubernator.V1/GetRateLimits", io.grpc.Status.Code.OK, 2_000_000);
    metrics.httpRequest("/v1/GetRateLimits", 200, 1_000_000);
    metrics.checked(CheckResult.OVER_LIMIT);
    metrics.refused(RefusalReason.HTTP_BODY_TOO_LARGE);
    metrics.watchCache(new Stats(7, 5, 3, 1));
    metrics.watchPeerUp("10.0.0.2:1051", () -> true);
    metrics.batchSent("10.0.0.2:1051", 12, 3_000_000, true);
    metrics.watchGlobalQueues(() -> 4, () -> 2);
    metrics.watchGlobalDropped(() -> 5);
    metrics.globalSend(1_000_000, false);
    metrics.globalBroadcast(1_000_000, true);
    metrics.watchHandOff(() -> 30, () -> 4);
    metrics.watchPeerBatches("10.0.0.3:1051", () -> 2, () -> 9);
    metrics.watchPeerCount(() -> 3);
    metrics.discoveryError("dns");

    String text = registry.scrape();

    assertThat(text)
        .contains(
            "weir_grpc_requests_seconds_count{code=\"OK\",method=\"pb.gubernator.V1/GetRateLimits\"} 1")
        .contains(
            "weir_grpc_requests_seconds_bucket{code=\"OK\",method=\"pb.gubernator.V1/GetRateLimits\",le=\"0.0025\"} 1")
        .contains("weir_http_requests_seconds_count{route=\"/v1/GetRateLimits\",status=\"200\"} 1")
        .contains("weir_checks_total{result=\"over_limit\"} 1.0")
        .contains("weir_requests_refused_total{reason=\"http_body_too_large\"} 1.0")
        .contains("weir_cache_size 7.0")
        .contains("weir_cache_access_total{type=\"hit\"} 5.0")
        .contains("weir_cache_access_total{type=\"miss\"} 3.0")
        .contains("weir_cache_unexpired_evictions_total 1.0")
        .contains("weir_batch_size_sum{peer=\"10.0.0.2:1051\"} 12.0")
        .contains("weir_batch_send_seconds_count{outcome=\"success\",peer=\"10.0.0.2:1051\"} 1")
        .contains("weir_global_send_queue_length 4.0")
        .contains("weir_global_broadcast_queue_length 2.0")
        .contains("weir_global_hits_dropped_total 5.0")
        .contains("weir_global_send_seconds_count{outcome=\"failure\"} 1")
        .contains("weir_global_broadcast_seconds_count{outcome=\"success\"} 1")
        .contains("weir_handoff_buckets_total{direction=\"sent\"} 30.0")
        .contains("weir_handoff_buckets_total{direction=\"received\"} 4.0")
        .contains("weir_peer_batches_total{peer=\"10.0.0.3:1051\"} 2.0")
        .contains("weir_peer_batch_items_total{peer=\"10.0.0.3:1051\"} 9.0")
        .contains("weir_peers 3.0")
        .contains("weir_discovery_errors_total{mechanism=\"dns\"} 1.0");
  }

  @Test
  void sameLabelsManyTimes_noMeterBuiltAgain_noAllocationPerEvent() {
    String unmeasurable = threadAllocationUnmeasurable();
    if (unmeasurable != null) {
      System.out.println("skipping the allocation test: " + unmeasurable);
    }
    org.junit.jupiter.api.Assumptions.assumeTrue(
        unmeasurable == null, () -> "skipping the allocation test: " + unmeasurable);
    Runnable[] events = {
      () -> metrics.grpcCall("pb.gubernator.V1/GetRateLimits", io.grpc.Status.Code.OK, 1_000_000),
      () -> metrics.httpRequest("/v1/GetRateLimits", 200, 1_000_000),
      () -> metrics.globalSend(1_000_000, true),
      () -> metrics.globalBroadcast(1_000_000, false),
      () -> metrics.discoveryError("dns")
    };
    for (Runnable event : events) {
      event.run(); // registers its meter
    }

    java.util.List<Long> bytesPerEvent = new java.util.ArrayList<>();
    for (Runnable event : events) {
      bytesPerEvent.add(allocatedPerCall(event, 20_000));
    }

    // A meter built again allocates its builder, tags, id and distribution config: 100s of bytes.
    assertThat(bytesPerEvent)
        .as("bytes allocated per event: gRPC, HTTP, GLOBAL send, broadcast, discovery error")
        .allSatisfy(b -> assertThat(b).isLessThan(16L));
    assertThat(registry.scrape())
        .contains("weir_http_requests_seconds_count{route=\"/v1/GetRateLimits\",status=\"200\"} 20001")
        .contains("weir_global_send_seconds_count{outcome=\"success\"} 20001")
        .contains("weir_global_broadcast_seconds_count{outcome=\"failure\"} 20001")
        .contains("weir_discovery_errors_total{mechanism=\"dns\"} 20001.0");
  }

  /**
   * Returns why this JVM cannot measure a thread's allocated bytes (then {@code
   * getThreadAllocatedBytes} returns -1 and the test above would pass whatever is allocated), or
   * null when it can.
   */
  private static String threadAllocationUnmeasurable() {
    java.lang.management.ThreadMXBean threads =
        java.lang.management.ManagementFactory.getThreadMXBean();
    if (!(threads instanceof com.sun.management.ThreadMXBean measured)) {
      return "the ThreadMXBean is not a com.sun.management.ThreadMXBean (" + threads.getClass() + ")";
    }
    if (!measured.isThreadAllocatedMemorySupported()) {
      return "this JVM does not support measuring thread allocated memory";
    }
    if (!measured.isThreadAllocatedMemoryEnabled()) {
      return "thread allocated memory measurement is disabled";
    }
    return null;
  }

  private static long allocatedPerCall(Runnable event, int calls) {
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
    long thread = Thread.currentThread().getId();
    long before = threads.getThreadAllocatedBytes(thread);
    for (int i = 0; i < calls; i++) {
      event.run();
    }
    return (threads.getThreadAllocatedBytes(thread) - before) / calls;
  }

  @Test
  void ringChanged_countedFromZero() {
    String before = registry.scrape();
    metrics.ringChanged();
    metrics.ringChanged();

    assertThat(before).contains("weir_ring_changes_total 0.0");
    assertThat(registry.scrape()).contains("weir_ring_changes_total 2.0");
  }

  @Test
  void watchPeerUp_peerGoesDown_gaugeFollowsAndDownCounted() {
    AtomicBoolean up = new AtomicBoolean(true);
    metrics.watchPeerUp("10.0.0.2:1051", up::get);

    String answering = registry.scrape();
    up.set(false);
    metrics.peerDown("10.0.0.2:1051");
    String down = registry.scrape();

    assertThat(answering).contains("weir_peer_up{peer=\"10.0.0.2:1051\"} 1.0");
    assertThat(down)
        .contains("weir_peer_up{peer=\"10.0.0.2:1051\"} 0.0")
        .contains("weir_peer_down_total{peer=\"10.0.0.2:1051\"} 1.0");
  }

  @Test
  void forgetPeer_downAndBatchReportedAfterwards_noSeriesComeBack() {
    String peer = "10.0.0.2:1051";
    metrics.watchPeerBatches(peer, () -> 1, () -> 3);
    metrics.watchPeerUp(peer, () -> true);
    metrics.batchSent(peer, 3, 1_000_000, true);
    metrics.peerDown(peer);
    String member = registry.scrape();

    metrics.forgetPeer(peer);
    metrics.peerDown(peer);
    metrics.batchSent(peer, 4, 2_000_000, false);

    assertThat(member)
        .contains("weir_peer_up{peer=\"10.0.0.2:1051\"} 1.0")
        .contains("weir_peer_down_total{peer=\"10.0.0.2:1051\"} 1.0")
        .contains("weir_batch_size_count{peer=\"10.0.0.2:1051\"} 1")
        .contains("weir_peer_batches_total{peer=\"10.0.0.2:1051\"} 1.0");
    assertThat(registry.scrape()).doesNotContain("peer=\"10.0.0.2:1051\"");
  }

  @Test
  void forgetPeer_whileABatchRegistersThePeersMeters_waitsForIt_andNoSeriesSurvive()
      throws Exception {
    String peer = "10.0.0.2:1051";
    CountDownLatch registering = new CountDownLatch(1);
    CountDownLatch registered = new CountDownLatch(1);
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    registry
        .config()
        .meterFilter(
            new MeterFilter() {
              @Override
              public Meter.Id map(Meter.Id id) {
                if (id.getName().equals(MicrometerMetrics.BATCH_SIZE)
                    && registering.getCount() > 0) {
                  registering.countDown();
                  awaitQuietly(registered);
                }
                return id;
              }
            });
    MicrometerMetrics metrics = new MicrometerMetrics(registry);
    metrics.watchPeerUp(peer, () -> true);
    Thread recording = new Thread(() -> metrics.batchSent(peer, 3, 1_000_000, true));
    recording.start();
    assertThat(registering.await(10, TimeUnit.SECONDS)).isTrue();
    Thread forgetter = new Thread(() -> metrics.forgetPeer(peer));
    forgetter.start();

    Thread.State state = stateOnceBlockedOrDone(forgetter, Duration.ofSeconds(10));
    registered.countDown();
    recording.join(10_000);
    forgetter.join(10_000);

    assertThat(state)
        .as("forgetPeer waited for the registration in progress of the peer's meters")
        .isEqualTo(Thread.State.BLOCKED);
    assertThat(recording.isAlive()).as("batchSent finished within 10 s").isFalse();
    assertThat(forgetter.isAlive()).as("forgetPeer finished within 10 s").isFalse();
    metrics.batchSent(peer, 4, 1_000_000, false);

    assertThat(registry.scrape()).doesNotContain("peer=\"10.0.0.2:1051\"");
  }

  /** Returns {@code thread}'s state once it is BLOCKED or TERMINATED, or at {@code within}. */
  private static Thread.State stateOnceBlockedOrDone(Thread thread, Duration within) {
    long deadline = System.nanoTime() + within.toNanos();
    Thread.State state = thread.getState();
    while (state != Thread.State.BLOCKED
        && state != Thread.State.TERMINATED
        && System.nanoTime() < deadline) {
      Thread.onSpinWait();
      state = thread.getState();
    }
    return state;
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Test
  void peerNeverWatched_downAndBatchReported_noSeries() {
    metrics.peerDown("10.0.0.9:1051");
    metrics.batchSent("10.0.0.9:1051", 4, 2_000_000, true);

    assertThat(registry.scrape()).doesNotContain("peer=\"10.0.0.9:1051\"");
  }

  @Test
  void forgottenPeerWatchedAgain_seriesStartAfresh() {
    String peer = "10.0.0.2:1051";
    metrics.watchPeerUp(peer, () -> true);
    metrics.peerDown(peer);
    metrics.forgetPeer(peer);

    metrics.watchPeerUp(peer, () -> true);
    metrics.watchPeerBatches(peer, () -> 0, () -> 0);
    metrics.peerDown(peer);
    metrics.batchSent(peer, 2, 1_000_000, true);

    assertThat(registry.scrape())
        .contains("weir_peer_up{peer=\"10.0.0.2:1051\"} 1.0")
        .contains("weir_peer_down_total{peer=\"10.0.0.2:1051\"} 1.0")
        .contains("weir_batch_size_sum{peer=\"10.0.0.2:1051\"} 2.0");
  }

  @Test
  void watchDiscoveryHealth_scrape_gaugeFollowsTheSupplierPerMechanism() {
    AtomicBoolean dnsHealthy = new AtomicBoolean(true);
    metrics.watchDiscoveryHealth("dns", dnsHealthy::get);
    metrics.watchDiscoveryHealth("etcd", () -> true);

    String up = registry.scrape();
    dnsHealthy.set(false);
    String down = registry.scrape();

    assertThat(up)
        .contains("# TYPE weir_discovery_healthy gauge")
        .contains("weir_discovery_healthy{mechanism=\"dns\"} 1.0")
        .contains("weir_discovery_healthy{mechanism=\"etcd\"} 1.0");
    assertThat(down)
        .contains("weir_discovery_healthy{mechanism=\"dns\"} 0.0")
        .contains("weir_discovery_healthy{mechanism=\"etcd\"} 1.0");
  }

  @Test
  void jvmMetrics_bound_memoryAndUptimeExposed() {
    try (JvmMetrics jvm = new JvmMetrics(registry)) {
      assertThat(registry.scrape())
          .contains("jvm_memory_used_bytes")
          .contains("jvm_threads_live_threads")
          .contains("process_uptime_seconds");
    }
  }

  @Test
  void watchPeerBatchesHandOffAndGlobalDropped_lambdasKeptByNobodyElse_stillReadAfterGarbageCollection() {
    long[] batches = {7};
    metrics.watchPeerBatches("10.0.0.3:1051", () -> batches[0], () -> 70);
    metrics.watchHandOff(() -> 30, () -> 4);
    metrics.watchGlobalDropped(() -> 3);
    java.lang.ref.WeakReference<Object> probe = new java.lang.ref.WeakReference<>(new Object());
    for (int i = 0; i < 50 && probe.get() != null; i++) {
      System.gc();
    }
    batches[0] = 8;

    assertThat(probe.get()).as("a collection ran").isNull();
    assertThat(registry.scrape())
        .contains("weir_peer_batches_total{peer=\"10.0.0.3:1051\"} 8.0")
        .contains("weir_peer_batch_items_total{peer=\"10.0.0.3:1051\"} 70.0")
        .contains("weir_handoff_buckets_total{direction=\"sent\"} 30.0")
        .contains("weir_global_hits_dropped_total 3.0");
  }
}
