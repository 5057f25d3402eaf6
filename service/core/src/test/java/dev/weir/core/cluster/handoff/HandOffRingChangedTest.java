package dev.weir.core.cluster.handoff;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.engine.BucketState;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.ForwardingBucketStore;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.ScanHoldingStore;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A ring change's store scan ({@link HandOff#ringChanged}) holds no lock others wait on and runs on
 * the scan executor, not on the thread that reports the change.
 */
class HandOffRingChangedTest {

  private final FakeClock clock = new FakeClock(1_000);
  private final ScanHoldingStore store = new ScanHoldingStore(new InMemoryBucketStore(clock));
  private final HandOff handOff = new HandOff("a:1", store, null, clock, Duration.ofSeconds(2));

  @BeforeEach
  void holdScans() {
    store.hold();
  }

  @AfterEach
  void releaseScan() {
    store.release();
  }

  @Test
  void pending_duringAScan_answersAtOnceWithAFutureThatWaitsForIt() throws Exception {
    HashRing both = HashRing.of(List.of("a:1", "b:1"), 16, PeerHash.FNV1A);
    CompletableFuture<CompletableFuture<Void>> change =
        CompletableFuture.supplyAsync(() -> handOff.ringChanged(both, both.without("a:1")));
    assertThat(store.awaitScanning(5)).isTrue();

    CompletableFuture<Void> pending =
        CompletableFuture.supplyAsync(handOff::pending).get(2, TimeUnit.SECONDS);

    assertThat(pending).as("the scan still runs").isNotDone();
    store.release();
    change.get(5, TimeUnit.SECONDS).get(5, TimeUnit.SECONDS);
    pending.get(5, TimeUnit.SECONDS);
  }

  @Test
  void ringChanged_withAScanExecutor_returnsBeforeScanningAndCompletesAfter() {
    List<Runnable> queued = new ArrayList<>();
    AtomicInteger scans = new AtomicInteger();
    HandOff deferred =
        new HandOff(
            "a:1",
            new ForwardingBucketStore(new InMemoryBucketStore(clock)) {
              @Override
              public void forEach(BiConsumer<String, BucketState> action) {
                scans.incrementAndGet();
                super.forEach(action);
              }
            },
            null,
            clock,
            Duration.ofSeconds(2),
            queued::add);
    HashRing both = HashRing.of(List.of("a:1", "b:1"), 16, PeerHash.FNV1A);

    CompletableFuture<Void> change = deferred.ringChanged(both, both.without("a:1"));

    assertThat(scans).as("not scanned on the reporting thread").hasValue(0);
    assertThat(change).isNotDone();
    assertThat(deferred.pending()).isNotDone();
    queued.forEach(Runnable::run);
    assertThat(scans).hasValue(1);
    assertThat(change).isDone();
    assertThat(deferred.pending()).isDone();
  }

  @Test
  void ringChanged_scanExecutorShutDown_completesWithoutSending() {
    HandOff closed =
        new HandOff(
            "a:1",
            new InMemoryBucketStore(clock),
            null,
            clock,
            Duration.ofSeconds(2),
            task -> {
              throw new RejectedExecutionException("shut down");
            });
    HashRing both = HashRing.of(List.of("a:1", "b:1"), 16, PeerHash.FNV1A);

    assertThat(closed.ringChanged(both, both.without("a:1"))).isDone();
    assertThat(closed.pending()).isDone();
  }

  @Test
  void copy_standInBucketOfAKeyMovingAway_keptHereNotSent() {
    InMemoryBucketStore buckets = new InMemoryBucketStore(clock);
    HashRing both = HashRing.of(List.of("a:1", "b:1"), 16, PeerHash.FNV1A);
    String key = null;
    for (int i = 0; key == null; i++) {
      String candidate = dev.weir.core.cluster.ClusterRateLimitService.STAND_IN_PREFIX + "n_k" + i;
      if (both.ownerOf(candidate).equals("a:1")) {
        key = candidate;
      }
    }
    buckets.put(
        key,
        new dev.weir.core.engine.TokenBucketState(
            dev.weir.core.model.Status.UNDER_LIMIT, 5, 60_000, 4, 1_000, 61_000));
    // No peer clients: a bucket chosen to move would fail the copy.
    HandOff standIns = new HandOff("a:1", buckets, null, clock, Duration.ofSeconds(2));

    assertThat(standIns.copy(both, both.without("a:1"))).isDone();
    assertThat(buckets.get(key)).isPresent();
  }
}
