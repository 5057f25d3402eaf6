package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.cluster.batch.Batcher;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.quota.QuotaShare;
import dev.weir.core.quota.QuotaUsage;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.ForwardingManagedChannel;
import dev.weir.core.testkit.IdlePeerHandler;
import dev.weir.proto.gubernator.ForwardAnswers;
import dev.weir.proto.gubernator.ForwardBatch;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.PeersV1Grpc;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.ReportQuotaUsageReq;
import dev.weir.proto.gubernator.ReportQuotaUsageResp;
import io.grpc.Attributes;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerTransportFilter;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * One peer client over a real loopback channel: it waits for a peer that is still starting, reports
 * a failed connection, and gives up its calls in flight when the peer is found down.
 */
class PeerClientTest {

  private static final Duration DEADLINE = Duration.ofSeconds(10);
  private static final Duration BATCH_TIMEOUT = Duration.ofMillis(500);

  private final FakeClock clock = new FakeClock();
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final List<String> reports = new java.util.concurrent.CopyOnWriteArrayList<>();
  private final CountDownLatch release = new CountDownLatch(1);
  private final AtomicInteger holding = new AtomicInteger();
  private final List<AutoCloseable> resources = new ArrayList<>();
  private int port;
  private ManagedChannel channel;
  private PeerClient client;

  @AfterEach
  void stop() throws Exception {
    release.countDown();
    for (AutoCloseable r : resources) {
      r.close();
    }
  }

  private void clientOfFreePort() throws IOException {
    clientOfFreePort(new PeerClientSettings(1000, Duration.ofMillis(1), DEADLINE, true));
  }

  private void clientOfFreePort(PeerClientSettings settings) throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = socket.getLocalPort();
    }
    channel = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
    resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    client =
        new PeerClient(
            "127.0.0.1:" + port,
            channel,
            settings,
            scheduler,
            clock);
    client.observe(
        new PeerCallObserver() {
          @Override
          public void answered(String peer) {
            reports.add("answered");
          }

          @Override
          public void unreachable(String peer, String reason) {
            reports.add("unreachable: " + reason);
          }

          @Override
          public void notAnswering(String peer, String error, boolean conclusive) {
            reports.add(conclusive ? "not answering, conclusive" : "not answering");
          }
        });
  }

  private void startPeer(boolean hangs) throws IOException {
    Server server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port))
            .addService(
                new PeersService(new Handler(hangs), dev.weir.core.time.SystemClock.INSTANCE))
            .build()
            .start();
    resources.add(0, () -> server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
  }

  private static RateLimitRequest req() {
    return RateLimitRequest.builder("n", "k")
        .hits(1)
        .limit(10)
        .duration(60_000)
        .behavior(Behavior.NO_BATCHING)
        .build();
  }

  @Test
  void forward_peerStillStarting_waitsForItsConnectionAndIsAnswered() throws Exception {
    clientOfFreePort();
    client.connect();
    Await.until(
        Duration.ofSeconds(5),
        () -> channel.getState(false) == ConnectivityState.TRANSIENT_FAILURE,
        "the first connection attempt fails");

    CompletableFuture<RateLimitResponse> answer = client.forward(req());
    startPeer(false);

    assertThat(answer.get(DEADLINE.toSeconds(), TimeUnit.SECONDS).status())
        .isEqualTo(Status.UNDER_LIMIT);
    assertThat(reports).contains("unreachable: cannot connect to peer '127.0.0.1:" + port + "'");
    assertThat(reports).endsWith("answered");
  }

  @Test
  void globalHitsSentToTheOwner_notCountedAsForwarding_forwardedItemIs() throws Exception {
    clientOfFreePort();
    startPeer(false);

    client.getPeerRateLimits(List.of(req(), req()), DEADLINE, "sending global hits to").get(
        DEADLINE.toSeconds(), TimeUnit.SECONDS);

    assertThat(client.batchesSent()).as("GLOBAL sends are not forwarding calls").isZero();
    assertThat(client.itemsSent()).isZero();

    client.forward(req()).get(DEADLINE.toSeconds(), TimeUnit.SECONDS);

    assertThat(client.batchesSent()).isEqualTo(1);
    assertThat(client.itemsSent()).isEqualTo(1);
  }

  @Test
  void peerDown_callInFlight_failsAtOnceInsteadOfAtItsDeadline() throws Exception {
    clientOfFreePort();
    startPeer(true);
    CompletableFuture<RateLimitResponse> hanging = client.forward(req());
    Await.until(
        Duration.ofSeconds(5),
        () -> channel.getState(false) == ConnectivityState.READY,
        "the call reached the peer");

    client.peerDown("found down by the test");

    assertThat(hanging)
        .failsWithin(Duration.ofSeconds(5))
        .withThrowableThat()
        .havingRootCause()
        .withMessageContaining("is down: found down by the test");
  }

  @Test
  void reportQuotaUsage_peerFoundDownWhileTheConnectionIsStillMade_failsLikelyUndelivered()
      throws Exception {
    clientOfFreePort();
    // Accepts the connection but never answers gRPC's handshake: the channel stays CONNECTING.
    ServerSocket silent = new ServerSocket(port, 1, InetAddress.getLoopbackAddress());
    resources.add(0, silent);
    CompletableFuture<List<QuotaShare>> shares =
        client.reportQuotaUsage(List.of(usage()), DEADLINE);
    Await.until(
        Duration.ofSeconds(5),
        () -> channel.getState(false) == ConnectivityState.CONNECTING,
        "the call waits for the connection");

    client.peerDown("found down by the test");

    Throwable error = shares.handle((s, e) -> e).get(5, TimeUnit.SECONDS);
    assertThat(error).hasRootCauseMessage(
        "peer '127.0.0.1:" + port + "' is down: found down by the test");
    assertThat(PeerClientPool.likelyUndelivered(error))
        .as("a call cancelled before any of it was sent reached no peer: %s", error)
        .isTrue();
  }

  @Test
  void reportQuotaUsage_peerFoundDownWhileTheCallIsWithIt_mayHaveBeenDelivered()
      throws Exception {
    clientOfFreePort();
    startPeer(true);
    CompletableFuture<List<QuotaShare>> shares =
        client.reportQuotaUsage(List.of(usage()), DEADLINE);
    Await.until(Duration.ofSeconds(5), () -> holding.get() == 1, "the call reached the peer");

    client.peerDown("found down by the test");

    Throwable error = shares.handle((s, e) -> e).get(5, TimeUnit.SECONDS);
    assertThat(io.grpc.Status.fromThrowable(error).getCode())
        .isEqualTo(io.grpc.Status.Code.CANCELLED);
    assertThat(PeerClientPool.likelyUndelivered(error)).as("%s", error).isFalse();
  }

  @Test
  void forward_streamStalledOnAnUpConnection_isDroppedAndTheNextBatchGoesOutOnANewConnection()
      throws Exception {
    clientOfFreePort(new PeerClientSettings(1000, Duration.ofMillis(1), BATCH_TIMEOUT, false));
    AtomicInteger connections = new AtomicInteger();
    AtomicInteger streams = new AtomicInteger();
    Server server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port))
            .addTransportFilter(
                new ServerTransportFilter() {
                  @Override
                  public Attributes transportReady(Attributes attributes) {
                    connections.incrementAndGet();
                    return attributes;
                  }
                })
            .addService(answeringAllButTheFirstStream(streams))
            .build()
            .start();
    resources.add(0, () -> server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    RateLimitRequest batched =
        RateLimitRequest.builder("n", "k").hits(1).limit(7).duration(60_000).build();
    List<CompletableFuture<RateLimitResponse>> unanswered = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      unanswered.add(client.forward(batched));
      Await.until(Duration.ofSeconds(5), () -> streams.get() == 1, "the first stream is open");
      for (int step = 0; step < 10; step++) {
        scheduler.advance(Duration.ofMillis(50));
      }
    }
    assertThat(unanswered).allMatch(CompletableFuture::isCompletedExceptionally);
    assertThat(reports)
        .as("the connection was up: no failure is conclusive")
        .containsOnly("not answering");

    CompletableFuture<RateLimitResponse> next = client.forward(batched);

    assertThat(next.get(5, TimeUnit.SECONDS).remaining()).isEqualTo(7);
    assertThat(streams).hasValue(2);
    assertThat(connections).as("the stalled connection was replaced").hasValue(2);
  }

  @Test
  void forward_peerBehindByEveryBatchInFlight_refusedAtOnceNamingThePeerAndNotCountedAgainstIt()
      throws Exception {
    clientOfFreePort(new PeerClientSettings(1000, Duration.ofMillis(1), BATCH_TIMEOUT, false));
    AtomicInteger streams = new AtomicInteger();
    Server server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port))
            .addService(answeringAllButTheFirstStream(streams))
            .build()
            .start();
    resources.add(0, () -> server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    RateLimitRequest batched =
        RateLimitRequest.builder("n", "k").hits(1).limit(7).duration(60_000).build();
    List<CompletableFuture<RateLimitResponse>> unanswered = new ArrayList<>();
    for (int i = 0; i < Batcher.MAX_IN_FLIGHT; i++) {
      unanswered.add(client.forward(batched));
      scheduler.advance(Duration.ofMillis(1)); // past batchWait: the next item opens another call
    }
    Await.until(Duration.ofSeconds(5), () -> streams.get() == 1, "the stream is open");
    scheduler.advance(BATCH_TIMEOUT);
    assertThat(unanswered).allMatch(CompletableFuture::isCompletedExceptionally);
    assertThat(reports).hasSize(Batcher.MAX_IN_FLIGHT).containsOnly("not answering");
    long batchesBefore = client.batchesSent();
    long itemsBefore = client.itemsSent();
    dev.weir.core.testkit.RecordingMetrics metrics = new dev.weir.core.testkit.RecordingMetrics();
    client.reportTo(metrics);

    CompletableFuture<RateLimitResponse> refused = client.forward(batched);

    assertThat(refused).isCompletedExceptionally();
    assertThatThrownBy(refused::join)
        .hasMessageContaining(
            "error while forwarding to peer '127.0.0.1:"
                + port
                + "': DEADLINE_EXCEEDED: the peer is 8 batches behind");
    assertThat(reports).as("the batch was not sent: it says nothing of the peer").hasSize(8);
    assertThat(client.batchesSent()).as("the batch was not sent: not counted").isEqualTo(batchesBefore);
    assertThat(client.itemsSent()).isEqualTo(itemsBefore);
    assertThat(metrics.events()).as("no batch send recorded").isEmpty();
  }

  @Test
  void forward_itemQueuedBehindUnansweredCall_waitsForItsDeadlineThenItsOwn_atMostTwiceTheTimeout()
      throws Exception {
    clientOfFreePort(
        new PeerClientSettings(1000, Duration.ofNanos(500_000), BATCH_TIMEOUT, false));
    AtomicInteger streams = new AtomicInteger();
    Server server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port))
            .addService(answeringAllButTheFirstStream(streams))
            .build()
            .start();
    resources.add(0, () -> server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    RateLimitRequest batched =
        RateLimitRequest.builder("n", "k").hits(1).limit(7).duration(60_000).build();
    CompletableFuture<RateLimitResponse> a = client.forward(batched);
    CompletableFuture<RateLimitResponse> b = client.forward(batched);
    Await.until(Duration.ofSeconds(5), () -> streams.get() == 1, "the stream is open");

    scheduler.advance(Duration.ofMillis(1));
    assertThat(b)
        .as("no timer sends the queue when batchWait has passed and no other item came")
        .isNotDone();
    scheduler.advance(BATCH_TIMEOUT.minusMillis(1));
    assertThat(a).isCompletedExceptionally();
    assertThat(b).as("sent when the call before it failed at its deadline").isNotDone();
    scheduler.advance(BATCH_TIMEOUT);

    assertThat(b).as("failed at its own deadline, twice the timeout after it came").isCompletedExceptionally();
    assertThatThrownBy(b::join).hasMessageContaining("DEADLINE_EXCEEDED");
  }

  @Test
  void forwardAll_requestOfManyItemsAtBatchLimitOne_everyItemAnswered() throws Exception {
    clientOfFreePort(new PeerClientSettings(1, Duration.ofMillis(1), DEADLINE, false));
    startPeer(false);
    RateLimitRequest batched =
        RateLimitRequest.builder("n", "k").hits(1).limit(70).duration(60_000).build();

    List<CompletableFuture<RateLimitResponse>> answers =
        client.forwardAll(java.util.Collections.nCopies(10, batched));

    for (CompletableFuture<RateLimitResponse> answer : answers) {
      assertThat(answer.get(DEADLINE.toSeconds(), TimeUnit.SECONDS).status())
          .isEqualTo(Status.UNDER_LIMIT);
    }
  }

  @Test
  void forward_oneBatchQueuedPerCallInFlightBehindSlowAnswers_everyItemCompletesWithinTwiceTheTimeout()
      throws Exception {
    clientOfFreePort(new PeerClientSettings(1, Duration.ofHours(1), BATCH_TIMEOUT, false));
    HoldingPeer peer = new HoldingPeer();
    Server server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port))
            .addService(peer)
            .build()
            .start();
    resources.add(0, () -> server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    RateLimitRequest batched =
        RateLimitRequest.builder("n", "k").hits(1).limit(7).duration(60_000).build();
    long submitted = clock.monotonicNanos();
    List<CompletableFuture<RateLimitResponse>> items = new ArrayList<>();
    int count = 2 * Batcher.MAX_IN_FLIGHT; // a batch in flight and one queued behind each call
    long[] completedAt = new long[count];
    for (int i = 0; i < count; i++) {
      int item = i;
      CompletableFuture<RateLimitResponse> f = client.forward(batched);
      f.whenComplete((r, e) -> completedAt[item] = clock.monotonicNanos());
      items.add(f);
    }
    Duration step = BATCH_TIMEOUT.multipliedBy(45).dividedBy(100);
    for (int round = 0; round < 10 && !items.stream().allMatch(CompletableFuture::isDone); round++) {
      Await.until(
          Duration.ofSeconds(5),
          () ->
              peer.held.size()
                  == Math.min(
                      Batcher.MAX_IN_FLIGHT,
                      items.stream().filter(f -> !f.isDone()).count()),
          "the peer holds every batch in flight");
      scheduler.advance(step);
      long doneOnceAnswered =
          items.stream().filter(CompletableFuture::isDone).count() + peer.answerHeld();
      Await.until(
          Duration.ofSeconds(5),
          () -> items.stream().filter(CompletableFuture::isDone).count() >= doneOnceAnswered,
          "the held answers arrived");
    }

    assertThat(items).allMatch(CompletableFuture::isDone);
    assertThat(items.stream().filter(CompletableFuture::isCompletedExceptionally)).isEmpty();
    for (int i = 0; i < items.size(); i++) {
      assertThat(Duration.ofNanos(completedAt[i] - submitted))
          .as("item %d (%s) completed within twice WEIR_BATCH_TIMEOUT", i + 1, items.get(i))
          .isLessThanOrEqualTo(BATCH_TIMEOUT.multipliedBy(2));
    }
  }

  @Test
  void probe_firstStartRefusedAsTheChannelEntersIdle_startedAgainAndAnswered() throws Exception {
    clientOfFreePort();
    startPeer(false);
    AtomicInteger calls = new AtomicInteger();
    PeerClient racing =
        new PeerClient(
            "127.0.0.1:" + port,
            new RefusingFirstStart(channel, calls),
            new PeerClientSettings(1000, Duration.ofMillis(1), DEADLINE, true),
            scheduler,
            clock);
    resources.add(racing::close);
    List<String> probed = new java.util.concurrent.CopyOnWriteArrayList<>();
    racing.observe(
        new PeerCallObserver() {
          @Override
          public void probeAnswered(String peer) {
            probed.add("answered");
          }

          @Override
          public void notAnswering(String peer, String error, boolean conclusive) {
            probed.add("not answering: " + error);
          }
        });

    racing.probe(DEADLINE).get(DEADLINE.toSeconds(), TimeUnit.SECONDS);

    assertThat(calls).as("the refused start and the one after it").hasValue(2);
    assertThat(probed).containsExactly("answered");
  }

  @Test
  void watchConnection_failedAttemptSeenJustBeforeThePeerAnsweredAProbe_peerStaysUp() {
    PeerLiveness liveness = new PeerLiveness(clock);
    liveness.unreachable("peer-a:81", "found down by the test");
    ScriptedStates states = watchedBy(liveness);
    // The callback reads the failed attempt; before it reports it, another connection is up and
    // the peer answers a probe on it.
    states.moveTo(
        ConnectivityState.TRANSIENT_FAILURE,
        () -> {
          clock.advance(Duration.ofMillis(1));
          states.moveTo(ConnectivityState.READY, () -> {});
          liveness.probeAnswered("peer-a:81");
        });

    states.runCallback();

    assertThat(liveness.isDown("peer-a:81"))
        .as("the failed attempt predates the answer that brought the peer back")
        .isFalse();
    assertThat(states.watchedFrom).isEqualTo(ConnectivityState.READY);
  }

  @Test
  void watchConnection_failedAttemptSeenBeforeAProbeAnswerAndAnotherFailedSince_peerGoesDown() {
    PeerLiveness liveness = new PeerLiveness(clock);
    liveness.unreachable("peer-a:81", "found down by the test");
    ScriptedStates states = watchedBy(liveness);
    // The callback reads a failed attempt; before it reports it, the peer answers a probe on a new
    // connection, which drops, and the next attempt fails: the channel is in TRANSIENT_FAILURE again
    // and stays there, so no callback would tell of it.
    states.moveTo(
        ConnectivityState.TRANSIENT_FAILURE,
        () -> {
          clock.advance(Duration.ofMillis(1));
          liveness.probeAnswered("peer-a:81");
        });

    states.runCallback();

    assertThat(liveness.downReason("peer-a:81")).isEqualTo("cannot connect to peer 'peer-a:81'");
  }

  @Test
  void watchConnection_everyFailedAttemptReadPredatesAReturn_readsOnceMoreThenWaits() {
    PeerLiveness liveness = new PeerLiveness(clock);
    liveness.unreachable("peer-a:81", "found down by the test");
    ScriptedStates states = watchedBy(liveness);
    states.moveTo(ConnectivityState.TRANSIENT_FAILURE, () -> {});
    states.afterEachRead =
        () -> {
          liveness.unreachable("peer-a:81", "found down by the test");
          clock.advance(Duration.ofMillis(1));
          liveness.probeAnswered("peer-a:81");
        };
    int readsBefore = states.reads;

    states.runCallback();

    assertThat(states.reads - readsBefore).as("the state read, then read again once").isEqualTo(2);
    assertThat(states.watchedFrom).isEqualTo(ConnectivityState.TRANSIENT_FAILURE);
  }

  @Test
  void watchConnection_failedAttemptSeenAfterThePeerAnsweredAProbe_peerGoesDown() {
    PeerLiveness liveness = new PeerLiveness(clock);
    liveness.unreachable("peer-a:81", "found down by the test");
    liveness.probeAnswered("peer-a:81");
    clock.advance(Duration.ofMillis(1));
    ScriptedStates states = watchedBy(liveness);
    states.moveTo(ConnectivityState.TRANSIENT_FAILURE, () -> {});

    states.runCallback();

    assertThat(liveness.downReason("peer-a:81")).isEqualTo("cannot connect to peer 'peer-a:81'");
  }

  /** Returns a scripted channel watched by a client of peer-a:81 reporting to {@code liveness}. */
  private ScriptedStates watchedBy(PeerLiveness liveness) {
    ScriptedStates states = new ScriptedStates(InProcessChannelBuilder.forName("none").build());
    resources.add(() -> states.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    PeerClient watching =
        new PeerClient(
            "peer-a:81",
            states,
            new PeerClientSettings(1000, Duration.ofMillis(1), DEADLINE, true),
            scheduler,
            clock);
    resources.add(watching::close);
    watching.observe(liveness);
    return states;
  }

  /**
   * A channel whose connectivity state the test sets and whose state-change callbacks it runs by
   * hand; everything else goes to its delegate.
   */
  private static final class ScriptedStates extends ForwardingManagedChannel {
    private volatile ConnectivityState state = ConnectivityState.IDLE;
    private volatile Runnable afterRead = () -> {};
    private volatile Runnable afterEachRead = () -> {};
    private volatile int reads;
    private volatile ConnectivityState watchedFrom;
    private Runnable callback;

    private ScriptedStates(ManagedChannel delegate) {
      super(delegate);
    }

    /** Sets the state; {@code afterRead} runs once, after the next read of it returns. */
    void moveTo(ConnectivityState next, Runnable afterRead) {
      this.state = next;
      this.afterRead = afterRead;
    }

    /** Runs the callback registered last, as the channel does when its state changed. */
    void runCallback() {
      Runnable c = callback;
      callback = null;
      c.run();
    }

    @Override
    public ConnectivityState getState(boolean requestConnection) {
      ConnectivityState read = state;
      reads++;
      Runnable after = afterRead;
      afterRead = () -> {};
      after.run();
      afterEachRead.run();
      return read;
    }

    @Override
    public void notifyWhenStateChanged(ConnectivityState source, Runnable callback) {
      this.watchedFrom = source;
      this.callback = callback;
    }
  }

  /**
   * A channel whose first call refuses to start as grpc-java's does when the channel entered idle
   * between the call's creation and its start; later calls go to its delegate. Counts the calls.
   */
  private static final class RefusingFirstStart extends ForwardingManagedChannel {
    private final AtomicInteger calls;

    private RefusingFirstStart(ManagedChannel real, AtomicInteger calls) {
      super(real);
      this.calls = calls;
    }

    @Override
    public <Q, A> io.grpc.ClientCall<Q, A> newCall(
        io.grpc.MethodDescriptor<Q, A> method, io.grpc.CallOptions options) {
      io.grpc.ClientCall<Q, A> call = super.newCall(method, options);
      if (calls.getAndIncrement() > 0) {
        return call;
      }
      return new io.grpc.ForwardingClientCall.SimpleForwardingClientCall<>(call) {
        @Override
        public void start(Listener<A> listener, io.grpc.Metadata headers) {
          throw new IllegalStateException("Resolution is pending");
        }
      };
    }
  }

  /** A peer that never answers the first forwarding stream and answers later ones at once. */
  private static PeersV1Grpc.PeersV1ImplBase answeringAllButTheFirstStream(AtomicInteger streams) {
    return new PeersV1Grpc.PeersV1ImplBase() {
      @Override
      public StreamObserver<ForwardBatch> forwardBatches(StreamObserver<ForwardAnswers> answers) {
        boolean stalls = streams.incrementAndGet() == 1;
        return new StreamObserver<>() {
          @Override
          public void onNext(ForwardBatch batch) {
            if (stalls) {
              return;
            }
            answers.onNext(fullAnswers(batch));
          }

          @Override
          public void onError(Throwable t) {}

          @Override
          public void onCompleted() {
            answers.onCompleted();
          }
        };
      }
    };
  }

  /** Returns the answers to {@code batch} that leave each request its whole limit. */
  private static ForwardAnswers fullAnswers(ForwardBatch batch) {
    ForwardAnswers.Builder out = ForwardAnswers.newBuilder().setId(batch.getId());
    batch
        .getRequestsList()
        .forEach(r -> out.addRateLimits(RateLimitResp.newBuilder().setRemaining(r.getLimit())));
    return out.build();
  }

  /** A peer that holds every forwarded batch until {@link #answerHeld} answers it. */
  private static final class HoldingPeer extends PeersV1Grpc.PeersV1ImplBase {
    private final java.util.Queue<Runnable> held = new java.util.concurrent.ConcurrentLinkedQueue<>();

    @Override
    public StreamObserver<ForwardBatch> forwardBatches(StreamObserver<ForwardAnswers> answers) {
      return new StreamObserver<>() {
        @Override
        public void onNext(ForwardBatch batch) {
          ForwardAnswers out = fullAnswers(batch);
          held.add(
              () -> {
                synchronized (answers) {
                  answers.onNext(out);
                }
              });
        }

        @Override
        public void onError(Throwable t) {}

        @Override
        public void onCompleted() {
          answers.onCompleted();
        }
      };
    }

    /** Answers every batch held now; returns how many it answered. */
    int answerHeld() {
      int answered = 0;
      for (Runnable answer = held.poll(); answer != null; answer = held.poll()) {
        answer.run();
        answered++;
      }
      return answered;
    }
  }

  /**
   * Returns a client of an in-process peer that answers every {@code GetPeerRateLimits} (the only
   * call it serves) with {@code missing} fewer answers than it was sent items, its reports recorded
   * in {@link #reports}.
   */
  private PeerClient clientOfPeerAnsweringShort(int missing, PeerClientSettings settings)
      throws IOException {
    return clientOfInProcessPeer(
        new PeersV1Grpc.PeersV1ImplBase() {
          @Override
          public void getPeerRateLimits(
              GetPeerRateLimitsReq request, StreamObserver<GetPeerRateLimitsResp> answers) {
            GetPeerRateLimitsResp.Builder out = GetPeerRateLimitsResp.newBuilder();
            for (int i = missing; i < request.getRequestsCount(); i++) {
              out.addRateLimits(RateLimitResp.newBuilder().setRemaining(9));
            }
            answers.onNext(out.build());
            answers.onCompleted();
          }
        },
        settings);
  }

  /**
   * Returns a client of an in-process peer that answers every {@code ReportQuotaUsage} (the only
   * call it serves) with no shares, its reports recorded in {@link #reports}.
   */
  private PeerClient clientOfQuotaPeerAnsweringNoShares(PeerClientSettings settings)
      throws IOException {
    return clientOfInProcessPeer(
        new PeersV1Grpc.PeersV1ImplBase() {
          @Override
          public void reportQuotaUsage(
              ReportQuotaUsageReq request, StreamObserver<ReportQuotaUsageResp> answers) {
            answers.onNext(ReportQuotaUsageResp.getDefaultInstance());
            answers.onCompleted();
          }
        },
        settings);
  }

  /** Returns a client of the in-process peer {@code service}, its reports recorded in {@link #reports}. */
  private PeerClient clientOfInProcessPeer(
      PeersV1Grpc.PeersV1ImplBase service, PeerClientSettings settings) throws IOException {
    String name = InProcessServerBuilder.generateName();
    Server server =
        InProcessServerBuilder.forName(name).directExecutor().addService(service).build().start();
    resources.add(0, () -> server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    ManagedChannel inProcess = InProcessChannelBuilder.forName(name).directExecutor().build();
    resources.add(() -> inProcess.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    PeerClient peer = new PeerClient("peer-a:81", inProcess, settings, scheduler, clock);
    peer.observe(
        new PeerCallObserver() {
          @Override
          public void answered(String peer) {
            reports.add("answered");
          }

          @Override
          public void answeredWithError(String peer, String error) {
            reports.add("answered with error: " + error);
          }

          @Override
          public void notAnswering(String peer, String error, boolean conclusive) {
            reports.add("not answering: " + error);
          }
        });
    return peer;
  }

  @Test
  void forward_itemSentAloneAnsweredWithNoAnswer_failsInternalNamingThePeerAndIsCountedAnError()
      throws Exception {
    PeerClient peer =
        clientOfPeerAnsweringShort(
            1, new PeerClientSettings(1000, Duration.ofMillis(1), DEADLINE, false));

    CompletableFuture<RateLimitResponse> answer = peer.forward(req()); // NO_BATCHING

    assertThat(answer)
        .failsWithin(Duration.ofSeconds(5))
        .withThrowableThat()
        .havingCause()
        .isInstanceOf(PeerException.class)
        .withMessageContaining("peer 'peer-a:81'")
        .withMessageContaining("INTERNAL")
        .withMessageContaining("expected 1 answers, got 0");
    assertThat(io.grpc.Status.fromThrowable(answer.handle((r, e) -> e).join()).getCode())
        .isEqualTo(io.grpc.Status.Code.INTERNAL);
    assertThat(reports)
        .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
        .startsWith("answered with error: ")
        .contains("expected 1 answers, got 0");
  }

  @Test
  void getPeerRateLimits_peerAnswersFewerItemsThanSent_failsInternalAndIsCountedAnError()
      throws Exception {
    PeerClient peer =
        clientOfPeerAnsweringShort(
            1, new PeerClientSettings(1000, Duration.ofMillis(1), DEADLINE, true));
    List<RateLimitRequest> three = List.of(req(), req(), req());

    CompletableFuture<List<RateLimitResponse>> answers =
        peer.getPeerRateLimits(three, DEADLINE, "sending global hits to");

    assertThat(answers)
        .failsWithin(Duration.ofSeconds(5))
        .withThrowableThat()
        .havingCause()
        .isInstanceOf(PeerException.class)
        .withMessageContaining("error while sending global hits to peer 'peer-a:81': INTERNAL")
        .withMessageContaining("expected 3 answers, got 2");
    assertThat(reports)
        .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
        .startsWith("answered with error: ");
  }

  @Test
  void relay_answeredWithNoAnswerForTheItem_failsInternalInsteadOfAnEmptyList() throws Exception {
    PeerClient peer =
        clientOfPeerAnsweringShort(
            1, new PeerClientSettings(1000, Duration.ofMillis(1), DEADLINE, true));

    CompletableFuture<List<RateLimitResponse>> answers =
        peer.relay("peer-b:82", List.of(req()), DEADLINE);

    assertThat(answers)
        .failsWithin(Duration.ofSeconds(5))
        .withThrowableThat()
        .havingCause()
        .isInstanceOf(PeerException.class)
        .withMessageContaining("relaying to 'peer-b:82' through peer 'peer-a:81'")
        .withMessageContaining("INTERNAL")
        .withMessageContaining("expected 1 answers, got 0");
    assertThat(io.grpc.Status.fromThrowable(answers.handle((r, e) -> e).join()).getCode())
        .isEqualTo(io.grpc.Status.Code.INTERNAL);
  }

  private static QuotaUsage usage() {
    return new QuotaUsage(
        RateLimitRequest.builder("n", "k").limit(10).duration(60_000).build(),
        "proxy-1",
        1,
        0,
        0,
        1000,
        false);
  }

  @Test
  void reportQuota_batchingDisabledPeerAnswersNoShare_failsInternalAndIsCountedAnError()
      throws Exception {
    PeerClient peer =
        clientOfQuotaPeerAnsweringNoShares(
            new PeerClientSettings(1000, Duration.ofMillis(1), DEADLINE, true));

    CompletableFuture<QuotaShare> share = peer.reportQuota(usage());

    assertThat(share)
        .failsWithin(Duration.ofSeconds(5))
        .withThrowableThat()
        .havingCause()
        .isInstanceOf(PeerException.class)
        .withMessageContaining("error while reporting quota usage to peer 'peer-a:81': INTERNAL")
        .withMessageContaining("expected 1 answers, got 0");
    assertThat(reports)
        .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
        .startsWith("answered with error: ")
        .contains("expected 1 answers, got 0");
  }

  @Test
  void reportQuota_batchedPeerAnswersNoShare_failsInternalAndIsCountedAnError() throws Exception {
    PeerClient peer =
        clientOfQuotaPeerAnsweringNoShares(
            new PeerClientSettings(1000, Duration.ofMillis(1), DEADLINE, false));

    CompletableFuture<QuotaShare> share = peer.reportQuota(usage());

    assertThat(share)
        .failsWithin(Duration.ofSeconds(5))
        .withThrowableThat()
        .havingCause()
        .isInstanceOf(PeerException.class)
        .withMessageContaining("INTERNAL")
        .withMessageContaining("expected 1 answers, got 0");
    assertThat(reports)
        .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
        .startsWith("answered with error: ");
  }

  /** Answers forwarded items, or holds them until the test ends when {@code hangs}. */
  private final class Handler extends IdlePeerHandler {
    private final boolean hangs;

    private Handler(boolean hangs) {
      this.hangs = hangs;
    }

    @Override
    public List<RateLimitResponse> decideAsOwner(List<RateLimitRequest> requests) {
      if (hangs) {
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return requests.stream()
          .map(r -> RateLimitResponse.of(Status.UNDER_LIMIT, 10, 9, 0))
          .toList();
    }

    @Override
    public List<QuotaShare> reportQuota(List<QuotaUsage> usages) {
      if (hangs) {
        holding.incrementAndGet();
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return usages.stream().map(u -> QuotaShare.error("not counted by the test")).toList();
    }
  }
}
