package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.ForwardingManagedChannel;
import dev.weir.proto.gubernator.ForwardAnswers;
import dev.weir.proto.gubernator.ForwardBatch;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.PeersV1Grpc;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The prober over a real loopback peer: an up peer whose forwarded batch went unanswered is probed
 * until it answers, so its error does not outlive the fault when no other call goes to it, and a
 * probe it does not answer does not count against it.
 */
class PeerProberTest {

  private static final Duration BATCH_TIMEOUT = Duration.ofMillis(500);
  private static final Duration PROBE_TIMEOUT = Duration.ofMillis(200);

  private final FakeClock clock = new FakeClock();
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final PeerLiveness liveness = new PeerLiveness(clock);
  private final AtomicInteger batches = new AtomicInteger();
  private final AtomicInteger probes = new AtomicInteger();
  private final AtomicInteger probesAnswered = new AtomicInteger();
  private final List<AutoCloseable> resources = new ArrayList<>();
  private String address;
  private PeerClient client;

  @AfterEach
  void stop() throws Exception {
    for (AutoCloseable r : resources) {
      r.close();
    }
  }

  @Test
  void unansweredBatch_noOtherTraffic_peerProbedUntilItAnswersAndItsErrorCleared()
      throws Exception {
    start(true);
    sendOneBatchThatGoesUnanswered();
    assertThat(liveness.unanswered()).containsExactly(address);
    assertThat(liveness.troubled())
        .singleElement()
        .satisfies(s -> assertThat(s.error()).contains("no answer on the forwarding stream"));

    scheduler.advance(PeerProber.INTERVAL);

    Await.until(
        Duration.ofSeconds(5), () -> liveness.troubled().isEmpty(), "the probe's answer clears");
    assertThat(probesAnswered).hasValue(1);
    assertThat(liveness.unanswered()).isEmpty();
    assertThat(liveness.isDown(address)).isFalse();
    scheduler.advance(PeerProber.INTERVAL.multipliedBy(3));
    assertThat(probes).as("the timer stops once no peer is in trouble").hasValue(1);
  }

  @Test
  void unansweredBatch_probesUnansweredToo_peerStaysUpWithItsError() throws Exception {
    start(false);
    sendOneBatchThatGoesUnanswered();

    int rounds = PeerLiveness.FAILURES_TO_DOWN + 1;
    // A round skips a peer whose probe is still in flight: rounds go on until that many were sent.
    Await.until(
        Duration.ofSeconds(10),
        () -> {
          scheduler.advance(PeerProber.INTERVAL);
          return probes.get() >= rounds;
        },
        rounds + " probes sent");

    assertThat(liveness.isDown(address)).as("only calls take an up peer down").isFalse();
    assertThat(liveness.unanswered()).containsExactly(address);
    assertThat(liveness.troubled()).hasSize(1);
  }

  @Test
  void downPeerReturnsWhileItsProbeWaitsForAConnection_nextRoundReachesIt() throws Exception {
    int port = freedPort();
    ManagedChannel channel = start(port, Duration.ofSeconds(30));
    client.connect();
    Await.until(Duration.ofSeconds(5), () -> liveness.isDown(address), "the peer is down");
    scheduler.advance(PeerProber.INTERVAL);
    Await.until(
        Duration.ofSeconds(5),
        () -> channel.getState(false) == ConnectivityState.TRANSIENT_FAILURE,
        "the probe's connection attempt failed: it waits out gRPC's reconnect backoff");
    Server back = serveOn(port);
    resources.add(() -> back.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));

    scheduler.advance(PeerProber.INTERVAL);

    assertThat(Await.holdsWithin(Duration.ofMillis(400), () -> !liveness.isDown(address)))
        .as("back within one round, not after gRPC's reconnect backoff (1 s and more)")
        .isTrue();
    assertThat(probesAnswered).hasValue(1);
  }

  @Test
  void downPeerMovesWhileItsProbeWaitsForAConnection_nextRoundProbesItsNewClient()
      throws Exception {
    Server moved =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .addService(peer(true))
            .build()
            .start();
    resources.add(() -> moved.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    int oldPort = freedPort();
    address = "peer-a";
    PeerClient old = client(oldPort);
    PeerClient renewed = client(moved.getPort());
    Deque<PeerClient> made = new ArrayDeque<>(List.of(old, renewed));
    PeerClientPool pool = new PeerClientPool(a -> made.removeFirst(), liveness, peer -> false);
    PeerProber prober =
        new PeerProber(
            liveness,
            pool,
            () -> Set.of(address),
            scheduler,
            PeerProber.INTERVAL,
            Duration.ofSeconds(30));
    liveness.addListener(prober);
    resources.add(0, prober);
    pool.get(address).connect();
    Await.until(Duration.ofSeconds(5), () -> liveness.isDown(address), "the peer is down");
    scheduler.advance(PeerProber.INTERVAL);
    pool.renew(Set.of(address));

    scheduler.advance(PeerProber.INTERVAL);

    Await.until(
        Duration.ofSeconds(5),
        () -> !liveness.isDown(address),
        "the round after the move probes the new client, not waiting for the old probe's deadline");
    assertThat(probesAnswered).hasValue(1);
  }

  @Test
  void downPeerWhoseHandshakeHangs_probeInFlight_connectionDialledAfreshOnceStuckForStuckConnect()
      throws Exception {
    HangingListener hanging = new HangingListener();
    resources.add(hanging);
    AtomicInteger dropped = new AtomicInteger();
    ManagedChannel channel =
        new ForwardingManagedChannel(
            NettyChannelBuilder.forAddress("127.0.0.1", hanging.port()).usePlaintext().build()) {
          @Override
          public void enterIdle() {
            dropped.incrementAndGet();
            super.enterIdle();
          }
        };
    start("127.0.0.1:" + hanging.port(), channel, Duration.ofSeconds(30));
    liveness.unreachable(address, "found down by the test");
    scheduler.advance(PeerProber.INTERVAL);
    Await.until(
        Duration.ofSeconds(5),
        () -> hanging.accepted() == 1 && channel.getState(false) == ConnectivityState.CONNECTING,
        "the probe waits on a connection whose handshake the peer never answers");
    int droppedBefore = dropped.get();

    // The round that first finds the attempt under way, then rounds until it has been for 2 s.
    long rounds = PeerClient.STUCK_CONNECT.dividedBy(PeerProber.INTERVAL);
    for (long i = 0; i < rounds; i++) {
      scheduler.advance(PeerProber.INTERVAL);
      assertThat(dropped.get())
          .as("an attempt younger than STUCK_CONNECT is left alone")
          .isEqualTo(droppedBefore);
    }
    scheduler.advance(PeerProber.INTERVAL);

    assertThat(dropped.get())
        .as("dropped once stuck for STUCK_CONNECT")
        .isEqualTo(droppedBefore + 1);
    Await.until(
        Duration.ofSeconds(5),
        () -> hanging.accepted() == 2,
        "the probe in flight dials the peer afresh instead of waiting for its 30 s deadline");
  }

  /** Sends one forwarded item on a stream the peer never answers and lets its deadline pass. */
  private void sendOneBatchThatGoesUnanswered() throws InterruptedException {
    CompletableFuture<RateLimitResponse> unanswered =
        client.forward(RateLimitRequest.builder("n", "k").hits(1).limit(7).duration(60_000).build());
    Await.until(Duration.ofSeconds(5), () -> batches.get() == 1, "the peer has the batch");
    scheduler.advance(BATCH_TIMEOUT);
    assertThat(unanswered).isCompletedExceptionally();
  }

  /**
   * Starts a loopback peer that never answers a forwarded batch and answers probes when {@code
   * answersProbes}, and a client of it in a pool watched by a prober.
   */
  private void start(boolean answersProbes) throws Exception {
    Server server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .addService(peer(answersProbes))
            .build()
            .start();
    resources.add(() -> server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    start(server.getPort(), PROBE_TIMEOUT);
  }

  /**
   * Starts a client of a peer at {@code port} in a pool watched by a prober whose probes wait up to
   * {@code probeTimeout}; returns the client's channel.
   */
  private ManagedChannel start(int port, Duration probeTimeout) {
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
    start("127.0.0.1:" + port, channel, probeTimeout);
    return channel;
  }

  /**
   * Starts a client of the peer at {@code peerAddress} over {@code channel} in a pool watched by a
   * prober whose probes wait up to {@code probeTimeout}.
   */
  private void start(String peerAddress, ManagedChannel channel, Duration probeTimeout) {
    address = peerAddress;
    resources.add(0, () -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    client =
        new PeerClient(
            address,
            channel,
            new PeerClientSettings(1000, Duration.ofMillis(1), BATCH_TIMEOUT, false),
            scheduler,
            clock);
    PeerClientPool pool = new PeerClientPool(a -> client, liveness, peer -> false);
    PeerProber prober =
        new PeerProber(
            liveness, pool, () -> Set.of(address), scheduler, PeerProber.INTERVAL, probeTimeout);
    liveness.addListener(prober);
    resources.add(0, prober);
    pool.get(address);
  }

  /** Returns a client named {@link #address} of a peer at {@code port}. */
  private PeerClient client(int port) {
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
    resources.add(0, () -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    return new PeerClient(
        address,
        channel,
        new PeerClientSettings(1000, Duration.ofMillis(1), BATCH_TIMEOUT, false),
        scheduler,
        clock);
  }

  /**
   * Starts a peer that answers probes on {@code port}, freed earlier, binding again for up to 2 s
   * in case another test's ephemeral socket holds the port meanwhile.
   */
  private Server serveOn(int port) throws Exception {
    AtomicReference<Server> started = new AtomicReference<>();
    Await.until(
        Duration.ofSeconds(2),
        () -> {
          try {
            started.set(
                NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port))
                    .addService(peer(true))
                    .build()
                    .start());
            return true;
          } catch (IOException taken) {
            return false;
          }
        },
        "port " + port + " free again");
    return started.get();
  }

  /** Returns a loopback port that was just free, so that connecting to it is refused. */
  private static int freedPort() throws Exception {
    Server gone =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).build().start();
    int port = gone.getPort();
    gone.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    return port;
  }

  private PeersV1Grpc.PeersV1ImplBase peer(boolean answersProbes) {
    return new PeersV1Grpc.PeersV1ImplBase() {
      @Override
      public StreamObserver<ForwardBatch> forwardBatches(StreamObserver<ForwardAnswers> answers) {
        return new StreamObserver<>() {
          @Override
          public void onNext(ForwardBatch batch) {
            batches.incrementAndGet();
          }

          @Override
          public void onError(Throwable t) {}

          @Override
          public void onCompleted() {
            answers.onCompleted();
          }
        };
      }

      @Override
      public void getPeerRateLimits(
          GetPeerRateLimitsReq request, StreamObserver<GetPeerRateLimitsResp> answer) {
        probes.incrementAndGet();
        if (answersProbes) {
          probesAnswered.incrementAndGet();
          answer.onNext(GetPeerRateLimitsResp.getDefaultInstance());
          answer.onCompleted();
        }
      }
    };
  }

  /**
   * A loopback listener that accepts every connection and never answers gRPC's handshake on it,
   * as a peer whose handshake was lost: the channel's attempt stays {@code CONNECTING}.
   */
  private static final class HangingListener implements AutoCloseable {
    private final ServerSocket socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    private final List<Socket> held = new CopyOnWriteArrayList<>();
    private final Thread acceptor = new Thread(this::acceptAll, "hanging-listener");

    HangingListener() throws IOException {
      acceptor.setDaemon(true);
      acceptor.start();
    }

    int port() {
      return socket.getLocalPort();
    }

    /** Returns how many connections were made to this listener. */
    int accepted() {
      return held.size();
    }

    private void acceptAll() {
      try {
        while (true) {
          held.add(socket.accept());
        }
      } catch (IOException closed) {
        // the listener was closed
      }
    }

    @Override
    public void close() throws IOException {
      socket.close();
      for (Socket s : held) {
        s.close();
      }
    }
  }
}
