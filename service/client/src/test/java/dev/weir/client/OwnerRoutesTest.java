package dev.weir.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.ring.GetRingResp;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link OwnerRoutes} with batchers whose calls the test holds at their start, so that a test can
 * change the ring and close between a batch timer taking its batch and its call starting.
 */
class OwnerRoutesTest {

  private static final String STAYER = "10.0.0.1:1051";
  private static final String LEAVER = "10.0.0.9:1051";
  private static final String JOINER = "10.0.0.2:1051";
  private static final int REPLICAS = 64;

  private final FakeBatchScheduler scheduler = new FakeBatchScheduler();
  private final Map<String, ManagedChannel> opened = new ConcurrentHashMap<>();
  private final CountDownLatch leaverCallStarting = new CountDownLatch(1);
  private final CountDownLatch leaverCallMayStart = new CountDownLatch(1);
  private final AtomicReference<Throwable> timerFailure = new AtomicReference<>();
  private long asks;

  @AfterEach
  void stop() {
    leaverCallMayStart.countDown();
    opened.values().forEach(ManagedChannel::shutdownNow);
  }

  /** Returns routes whose leaver's calls wait, as they start, until the test lets them. */
  private OwnerRoutes routes() {
    return new OwnerRoutes(
        address -> {
          ManagedChannel channel = InProcessChannelBuilder.forName(address).build();
          opened.put(address, channel);
          return channel;
        },
        (member, channel) ->
            new CheckBatcher(
                Duration.ofMillis(5),
                WeirClient.MAX_BATCH,
                WeirClient.DEFAULT_MAX_BATCH_BYTES,
                scheduler,
                requests -> {
                  if (member.equals(LEAVER)) {
                    leaverCallStarting.countDown();
                    await(leaverCallMayStart);
                  }
                  return CompletableFuture.completedFuture(
                      Collections.nCopies(requests.size(), RateLimitResp.getDefaultInstance()));
                }));
  }

  private static void await(CountDownLatch latch) {
    try {
      assertThat(latch.await(30, TimeUnit.SECONDS)).as("the test let the call start").isTrue();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static GetRingResp ringOf(String... members) {
    return GetRingResp.newBuilder()
        .addAllMembers(List.of(members))
        .setHash("fnv1a-fmix64")
        .setReplicas(REPLICAS)
        .build();
  }

  private static RateLimitReq itemOwnedBy(String owner, String... members) {
    HashRing ring = HashRing.of(List.of(members), REPLICAS, PeerHash.FNV1A_FMIX64);
    return IntStream.range(0, 200)
        .mapToObj(i -> WeirClientTest.item("account:" + i))
        .filter(item -> ring.ownerOf(OwnerRoutes.hashKey(item)).equals(owner))
        .findFirst()
        .orElseThrow();
  }

  /**
   * Queues a check the leaver owns and has its batch timer take it on another thread, which is
   * held before its call starts; returns that thread.
   */
  private Thread leaverBatchTakenNotStarted(OwnerRoutes routes) throws InterruptedException {
    routes.apply(ringOf(STAYER, LEAVER), ++asks);
    RateLimitReq request = itemOwnedBy(LEAVER, STAYER, LEAVER);
    routes.batcherFor(request)
        .add(List.of(new CheckBatcher.Pending(request, new CompletableFuture<>())));
    Thread timer = new Thread(scheduler::runDue, "leaver-batch-timer");
    timer.setUncaughtExceptionHandler((thread, failure) -> timerFailure.set(failure));
    timer.start();
    assertThat(leaverCallStarting.await(30, TimeUnit.SECONDS)).isTrue();
    return timer;
  }

  @Test
  void close_afterTwoRingChanges_returnsTheLeaversBatcherWhoseCallHasNotStarted()
      throws Exception {
    OwnerRoutes routes = routes();
    Thread timer = leaverBatchTakenNotStarted(routes);
    CheckBatcher leaver = routes.batcherFor(itemOwnedBy(LEAVER, STAYER, LEAVER));

    routes.apply(ringOf(STAYER), ++asks);
    routes.apply(ringOf(STAYER, JOINER), ++asks);
    List<CheckBatcher> mayNotHaveStarted = routes.close();

    assertThat(mayNotHaveStarted)
        .as("batchers close() must wait for: the leaver's call has not started")
        .contains(leaver);
    leaverCallMayStart.countDown();
    timer.join(30_000);
    assertThat(timer.isAlive()).as("the leaver's batch timer thread ended").isFalse();
    assertThat(timerFailure.get()).as("the leaver's batch timer thread's failure").isNull();
    assertThat(opened.get(LEAVER).isShutdown()).as("the leaver's channel").isTrue();
  }

  @Test
  void apply_forgetsALeaverOnceItsCallsStarted() throws Exception {
    OwnerRoutes routes = routes();
    Thread timer = leaverBatchTakenNotStarted(routes);
    CheckBatcher leaver = routes.batcherFor(itemOwnedBy(LEAVER, STAYER, LEAVER));
    routes.apply(ringOf(STAYER), ++asks);
    leaverCallMayStart.countDown();
    timer.join(30_000);
    assertThat(timer.isAlive()).as("the leaver's batch timer thread ended").isFalse();
    assertThat(timerFailure.get()).as("the leaver's batch timer thread's failure").isNull();

    routes.apply(ringOf(STAYER, JOINER), ++asks);

    assertThat(routes.close()).as("a leaver with no call left to start").doesNotContain(leaver);
  }

  @Test
  void apply_ringOfFewerPointsThanAnArrayHoldsButTooLargeToBuild_isRefused() {
    OwnerRoutes routes = routes();
    routes.apply(ringOf(STAYER, LEAVER), ++asks);
    GetRingResp tooLarge = ringOfMaxReplicas(List.of(), 32_767);

    assertThatThrownBy(() -> routes.apply(tooLarge, ++asks))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "members (32767) times replicas (65536) is 2147418112 points; allowed: at most"
                + " 16777216");
    assertThat(routes.members()).as("the ring in use").containsExactly(STAYER, LEAVER);
    routes.close();
  }

  @Test
  void apply_ringTooLargeToBuild_isRefusedNamingItsSize_andKeepsTheRingAndItsChannels() {
    OwnerRoutes routes = routes();
    routes.apply(ringOf(STAYER, LEAVER), ++asks);
    // 32 769 members of 65 536 points each: more points than an array holds.
    GetRingResp tooLarge = ringOfMaxReplicas(List.of(STAYER), 32_768);

    assertThatThrownBy(() -> routes.apply(tooLarge, ++asks))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "members (32769) times replicas (65536) is 2147549184 points; allowed: at most"
                + " 16777216");

    assertThat(routes.members()).as("the ring in use").containsExactly(STAYER, LEAVER);
    assertThat(opened.keySet()).as("channels opened").containsOnly(STAYER, LEAVER);
    routes.close();
    assertThat(opened.get(LEAVER).isShutdown()).as("the channel of the member the refused ring"
        + " dropped, after close()").isTrue();
  }

  /** A ring of {@code known} and {@code more} other members, each with the most replicas. */
  private static GetRingResp ringOfMaxReplicas(List<String> known, int more) {
    return GetRingResp.newBuilder()
        .addAllMembers(known)
        .addAllMembers(IntStream.range(0, more).mapToObj(i -> "10.1." + i + ":1051").toList())
        .setHash("fnv1a-fmix64")
        .setReplicas(HashRing.MAX_REPLICAS)
        .build();
  }
}
