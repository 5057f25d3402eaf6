package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.InProcessPeers;
import dev.weir.core.testkit.RecordingMetrics;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class PeerClientPoolTest {

  private final FakeClock clock = new FakeClock();
  private final InProcessPeers peers =
      new InProcessPeers(
          new PeerClientSettings(1000, Duration.ofMillis(1), Duration.ofSeconds(5), false),
          clock);
  private final AtomicInteger created = new AtomicInteger();
  private final PeerClientPool pool = new PeerClientPool(this::countedClient, clock);

  /** Makes the client of {@code address} over the in-process peers, counting it in {@link #created}. */
  private PeerClient countedClient(String address) {
    created.incrementAndGet();
    return peers.client(address);
  }

  /** Returns a pool making clients with {@code factory} only for the peers in {@code discovered}. */
  private PeerClientPool knowing(Set<String> discovered, Function<String, PeerClient> factory) {
    return new PeerClientPool(factory, new PeerLiveness(clock), peer -> false, discovered::contains);
  }

  @AfterEach
  void stop() {
    pool.close();
    peers.close();
  }

  private static RateLimitRequest req() {
    return RateLimitRequest.builder("n", "k").hits(1).limit(10).duration(60_000).build();
  }

  @Test
  void likelyUndelivered_refusalsUnavailableAndUnsentCalls_yesDeadlinesAndCancelsNo() {
    PeerException unsent = new PeerException("10.0.0.1:1051", "peer is down", null);
    PeerException unavailable =
        new PeerException(
            "10.0.0.1:1051",
            "connection refused",
            new StatusRuntimeException(io.grpc.Status.UNAVAILABLE.withDescription("io exception")));
    PeerException late =
        new PeerException(
            "10.0.0.1:1051",
            "no answer",
            new StatusRuntimeException(io.grpc.Status.DEADLINE_EXCEEDED));
    PeerException cancelled =
        new PeerException(
            "10.0.0.1:1051", "found down", new StatusRuntimeException(io.grpc.Status.CANCELLED));
    PeerException cancelledUnsent =
        new PeerException(
            "10.0.0.1:1051",
            "found down while connecting",
            new UnsentCall(
                "10.0.0.1:1051", new StatusRuntimeException(io.grpc.Status.CANCELLED)));

    assertThat(PeerClientPool.likelyUndelivered(unsent)).isTrue();
    assertThat(PeerClientPool.likelyUndelivered(new CompletionException(unavailable))).isTrue();
    assertThat(PeerClientPool.likelyUndelivered(unavailable)).isTrue();
    assertThat(PeerClientPool.likelyUndelivered(late)).isFalse();
    assertThat(PeerClientPool.likelyUndelivered(new CompletionException(cancelled))).isFalse();
    assertThat(PeerClientPool.likelyUndelivered(new CompletionException(cancelledUnsent)))
        .isTrue();
  }

  @Test
  void liveness_poolMadeWithTheClientsClock_timesOutagesOnIt() {
    pool.liveness().unreachable("a:1", "refused");
    clock.advance(Duration.ofSeconds(3));

    assertThat(pool.liveness().troubled())
        .extracting(PeerLiveness.PeerState::downFor)
        .containsExactly(Duration.ofSeconds(3));
  }

  @Test
  void reportTo_batchForwarded_sizeAndOutcomeRecordedForClientsBeforeAndAfter() {
    RecordingMetrics metrics = new RecordingMetrics();
    PeerClient before = pool.get("a:1");
    pool.reportTo(metrics);
    PeerClient after = pool.get("b:1");

    CompletableFuture<RateLimitResponse> first = before.forward(req());
    CompletableFuture<RateLimitResponse> second = before.forward(req());
    after.forward(req());

    assertThat(first.join().status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(second.join().status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(metrics.events())
        .containsExactlyInAnyOrder("batch a:1 1 ok 0", "batch a:1 1 ok 0", "batch b:1 1 ok 0");
  }

  @Test
  void retain_peerLeftWithQueuedItems_itemsFailWithPeerExceptionAndAreNotSent() {
    PeerClientPool silent =
        new PeerClientPool(
            address ->
                new PeerClient(
                    address,
                    InProcessChannelBuilder.forName(InProcessServerBuilder.generateName())
                        .directExecutor()
                        .build(),
                    new PeerClientSettings(1000, Duration.ofMillis(1), Duration.ofSeconds(5), false),
                    new FakeScheduler(clock),
                    clock),
            clock);
    PeerClient left = silent.get("b:1");
    CompletableFuture<RateLimitResponse> inFlight = left.forward(req());
    CompletableFuture<RateLimitResponse> queued = left.forward(req());
    assertThat(left.batchesSent()).as("the second item waits behind the first").isOne();

    silent.retain(List.of("a:1"));

    assertThat(inFlight).isNotDone();
    assertThatThrownBy(queued::join)
        .hasCauseInstanceOf(PeerException.class)
        .hasMessageContaining("peer 'b:1' left the ring");
    assertThat(left.batchesSent()).isOne();
    silent.close();
  }

  @Test
  void close_queuedItems_sentBeforeChannelsClose() {
    CompletableFuture<RateLimitResponse> queued = pool.get("b:1").forward(req());

    pool.close();

    assertThat(queued.join().status()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(peers.itemsChecked()).isEqualTo(1);
  }

  @Test
  void get_afterClose_refusedWithClearErrorAndNoClientCreated() {
    pool.close();

    assertThatThrownBy(() -> pool.get("b:1"))
        .isInstanceOf(PeerException.class)
        .hasMessageContaining("peer 'b:1'")
        .hasMessageContaining("shutting down");
    assertThat(pool.call("b:1", c -> c.forward(req()))).isCompletedExceptionally();
    pool.connect(List.of("c:1"));
    assertThat(created.get()).isZero();
    assertThat(pool.clients()).isEmpty();
  }

  @Test
  void call_clientCannotBeMadeOrTheCallThrows_failedFutureNamingThePeerNotAThrow() {
    PeerClientPool failing =
        new PeerClientPool(
            address -> {
              if (address.equals("bad:1")) {
                throw new IllegalArgumentException("no channel for 'bad:1': address not resolvable");
              }
              return peers.client(address);
            },
            clock);
    try {
      CompletableFuture<RateLimitResponse> unmade = failing.call("bad:1", c -> c.forward(req()));
      CompletableFuture<RateLimitResponse> thrown =
          failing.call(
              "a:1",
              c -> {
                throw new IllegalStateException("Resolution is pending");
              });

      assertThat(unmade).isCompletedExceptionally();
      assertThatThrownBy(unmade::join)
          .hasCauseInstanceOf(PeerException.class)
          .hasMessageContaining("peer 'bad:1'")
          .hasMessageContaining("address not resolvable");
      assertThatThrownBy(thrown::join)
          .hasCauseInstanceOf(PeerException.class)
          .hasMessageContaining("peer 'a:1'")
          .hasMessageContaining("Resolution is pending");
    } finally {
      failing.close();
    }
  }

  @Test
  void forwardAll_clientCannotBeMade_eachItemFailsNamingThePeerNotAThrow() {
    PeerClientPool failing =
        new PeerClientPool(
            address -> {
              throw new IllegalArgumentException("no channel for 'bad:1': address not resolvable");
            },
            clock);
    try {
      List<CompletableFuture<RateLimitResponse>> items =
          failing.forwardAll("bad:1", List.of(req(), req()));

      assertThat(items).hasSize(2);
      for (CompletableFuture<RateLimitResponse> item : items) {
        assertThatThrownBy(item::join)
            .hasCauseInstanceOf(PeerException.class)
            .hasMessageContaining("peer 'bad:1'")
            .hasMessageContaining("address not resolvable");
      }
    } finally {
      failing.close();
    }
  }

  @Test
  void get_unknownPeer_refusedWithClearErrorAndNoClientCreated() {
    Set<String> discovered = new HashSet<>(Set.of("a:1", "b:1"));
    PeerClientPool known = knowing(discovered, this::countedClient);
    try {
      known.get("b:1");
      discovered.remove("b:1");
      known.retain(discovered);

      assertThatThrownBy(() -> known.get("b:1"))
          .isInstanceOf(PeerException.class)
          .hasMessageContaining("peer 'b:1'")
          .hasMessageContaining("discovery no longer reports it");
      assertThat(known.call("b:1", c -> c.forward(req()))).isCompletedExceptionally();
      known.connect(List.of("b:1"));
      assertThat(created.get()).as("only the client made while b:1 was known").isEqualTo(1);
      assertThat(known.clients()).isEmpty();
      assertThat(known.get("a:1").address()).isEqualTo("a:1");
    } finally {
      known.close();
    }
  }

  @Test
  void retain_whileAClientOfTheDroppedPeerIsBeingCreated_removesItOnceCreated() throws Exception {
    Set<String> discovered = ConcurrentHashMap.newKeySet();
    discovered.addAll(List.of("a:1", "b:1"));
    CountDownLatch creating = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    PeerClientPool known =
        knowing(
            discovered,
            address -> {
              creating.countDown();
              try {
                release.await(10, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              return peers.client(address);
            });
    try {
      CompletableFuture<PeerClient> getting = CompletableFuture.supplyAsync(() -> known.get("b:1"));
      assertThat(creating.await(10, TimeUnit.SECONDS)).isTrue();
      discovered.remove("b:1");
      Thread retaining = new Thread(() -> known.retain(discovered), "retain");
      retaining.start();
      Await.until(
          Duration.ofSeconds(10),
          () -> retaining.getState() == Thread.State.BLOCKED,
          "retain waiting for the client being created");

      release.countDown();
      getting.get(10, TimeUnit.SECONDS);
      retaining.join(10_000);

      assertThat(known.clients()).as("the dropped peer's client, created meanwhile, is gone").isEmpty();
    } finally {
      release.countDown();
      known.close();
    }
  }
}
