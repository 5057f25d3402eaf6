package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import ch.qos.logback.core.read.ListAppender;
import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.peer.PeerInputValidator;
import dev.weir.core.cluster.snapshot.SnapshotDirectory;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import io.grpc.Server;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.io.InputStream;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Optional;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

class WeirNodeStartFailureTest {

  @TempDir Path snapshots;

  private static ServerSocket bind(int port) throws Exception {
    ServerSocket socket = new ServerSocket();
    socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    return socket;
  }

  @Test
  void start_httpPortTaken_failsNamingItAndReleasesTheGrpcPortItHadBound() throws Exception {
    int grpcPort;
    try (ServerSocket grpcFree = bind(0)) {
      grpcPort = grpcFree.getLocalPort();
    }
    try (ServerSocket taken = bind(0)) {
      WeirConfig config =
          new WeirConfig(
              new HostPort("127.0.0.1", grpcPort),
              new HostPort("127.0.0.1", taken.getLocalPort()),
              new HostPort("127.0.0.1", grpcPort),
              1000,
              "info");

      assertThatThrownBy(() -> WeirNode.builder(config).start())
          .isInstanceOf(BindException.class)
          .hasMessageStartingWith(
              "cannot bind the HTTP listener at WEIR_HTTP_ADDRESS=127.0.0.1:"
                  + taken.getLocalPort());
    }

    assertThatCode(() -> bind(grpcPort).close()).doesNotThrowAnyException();
  }

  @Test
  void start_httpPortTakenWithoutWarmUp_failsBeforeItCallsAnyPeer() throws Exception {
    Queue<String> peerCalls = new ConcurrentLinkedQueue<>();
    Server peer = recordingServer(peerCalls);
    int grpcPort;
    int peerPort;
    try (ServerSocket grpcFree = bind(0);
        ServerSocket peerFree = bind(0)) {
      grpcPort = grpcFree.getLocalPort();
      peerPort = peerFree.getLocalPort();
    }
    try (ServerSocket taken = bind(0)) {
      WeirConfig config =
          new WeirConfig(
              new HostPort("127.0.0.1", grpcPort),
              new HostPort("127.0.0.1", taken.getLocalPort()),
              new HostPort("127.0.0.1", grpcPort),
              1000,
              "info");
      List<String> members =
          List.of(
              "127.0.0.1:" + grpcPort + "@" + peerPort,
              "127.0.0.2:1051@" + peer.getPort());

      assertThatThrownBy(
              () ->
                  WeirNode.builder(config)
                      .cluster(ClusterSettings.defaults().withStaticPeers(members))
                      .peers(
                          new dev.weir.core.cluster.peer.auth.PeerSettings(
                              new HostPort("127.0.0.1", peerPort),
                              TestConfigs.peers().secret(),
                              java.util.Optional.empty(),
                              java.util.Optional.empty(),
                              false))
                      .start())
          .isInstanceOf(BindException.class)
          .hasMessageStartingWith("cannot bind the HTTP listener at WEIR_HTTP_ADDRESS=");
    } finally {
      peer.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }

    assertThat(peerCalls).isEmpty();
  }

  @Test
  void stopDuringTheWarmUp_endsTheStartPromptlyWithoutJoiningAndKeepsTheSnapshot()
      throws Exception {
    FakeClock clock = new FakeClock();
    InMemoryBucketStore before = new InMemoryBucketStore(clock);
    new LocalLimiter(new RateLimitEngine(ZoneOffset.UTC), before, clock)
        .decide(RateLimitRequest.builder("n", "spent").hits(5).limit(5).duration(600_000).build());
    new SnapshotDirectory(
            snapshots, "127.0.0.1:1", new PeerInputValidator(InputLimits.DEFAULTS, "127.0.0.1:1"), clock)
        .save(before);
    Queue<String> peerCalls = new ConcurrentLinkedQueue<>();
    Server peer = recordingServer(peerCalls);
    int grpcPort;
    int peerPort;
    try (ServerSocket grpcFree = bind(0);
        ServerSocket peerFree = bind(0)) {
      grpcPort = grpcFree.getLocalPort();
      peerPort = peerFree.getLocalPort();
    }
    WeirNode.Builder builder =
        WeirNode.builder(
                new WeirConfig(
                    new HostPort("127.0.0.1", grpcPort),
                    new HostPort("127.0.0.1", 0),
                    new HostPort("127.0.0.1", grpcPort),
                    1000,
                    "info"))
            .clock(clock)
            .warmUp(NodeWarmUp.MAX_BUDGET)
            .cluster(
                ClusterSettings.defaults()
                    .withHandoff(true)
                    .withSnapshotDir(Optional.of(snapshots))
                    .withStaticPeers(
                        List.of(
                            "127.0.0.1:" + grpcPort + "@" + peerPort,
                            "127.0.0.2:1051@" + peer.getPort())))
            .peers(
                new dev.weir.core.cluster.peer.auth.PeerSettings(
                    new HostPort("127.0.0.1", peerPort),
                    TestConfigs.peers().secret(),
                    Optional.empty(),
                    Optional.empty(),
                    false));
    CountDownLatch warmingUp = new CountDownLatch(1);
    Logger warmUpLog = (Logger) LoggerFactory.getLogger(NodeWarmUp.class);
    AppenderBase<ILoggingEvent> firstLine =
        new AppenderBase<>() {
          @Override
          protected void append(ILoggingEvent event) {
            warmingUp.countDown();
          }
        };
    firstLine.start();
    warmUpLog.addAppender(firstLine);
    NodeShutdownHook hook = NodeShutdownHook.unregistered();
    AtomicReference<Exception> failure = new AtomicReference<>();
    Thread starting =
        new Thread(
            () ->
                hook.startStopping(
                    stopping -> {
                      try {
                        return builder.stopRequested(stopping).start();
                      } catch (Exception e) {
                        failure.set(e);
                        return null;
                      }
                    },
                    WeirNode::close),
            "test-start");
    Thread signal = new Thread(hook::run, "test-shutdown");
    try {
      starting.start();
      assertThat(warmingUp.await(30, TimeUnit.SECONDS)).as("the warm-up began").isTrue();

      signal.start();
      signal.join(10_000);

      assertThat(signal.isAlive()).as("the stop still waits for the warm-up").isFalse();
      starting.join(10_000);
      assertThat(failure.get())
          .isInstanceOf(WeirNode.StartStopped.class)
          .hasMessageContaining("did not join the cluster");
      assertThat(peerCalls).as("the calls the node made to its peer").isEmpty();
      SnapshotDirectory.Loaded left =
          new SnapshotDirectory(
                  snapshots,
                  "127.0.0.1:2",
                  new PeerInputValidator(InputLimits.DEFAULTS, "127.0.0.1:2"),
                  clock)
              .load(b -> {});
      assertThat(left.bucketCount()).as("the buckets left for the next start").isEqualTo(1);
    } finally {
      warmUpLog.detachAppender(firstLine);
      clock.advance(Duration.ofMinutes(10));
      signal.join(60_000);
      starting.join(60_000);
      peer.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void start_httpHostDoesNotResolve_failsNamingItBeforeTheWarmUpAndAnyPeerCall() throws Exception {
    Queue<String> peerCalls = new ConcurrentLinkedQueue<>();
    Server peer = recordingServer(peerCalls);
    int grpcPort;
    int peerPort;
    try (ServerSocket grpcFree = bind(0);
        ServerSocket peerFree = bind(0)) {
      grpcPort = grpcFree.getLocalPort();
      peerPort = peerFree.getLocalPort();
    }
    Logger warmUpLog = (Logger) LoggerFactory.getLogger(NodeWarmUp.class);
    ListAppender<ILoggingEvent> warmUpLines = new ListAppender<>();
    warmUpLines.start();
    warmUpLog.addAppender(warmUpLines);
    try {
      WeirConfig config =
          new WeirConfig(
              new HostPort("127.0.0.1", grpcPort),
              new HostPort("weir-0.invalid", 1050),
              new HostPort("127.0.0.1", grpcPort),
              1000,
              "info");

      assertThatThrownBy(
              () ->
                  WeirNode.builder(config)
                      .warmUp(Duration.ofSeconds(2))
                      .cluster(
                          ClusterSettings.defaults()
                              .withHandoff(true)
                              .withStaticPeers(
                                  List.of(
                                      "127.0.0.1:" + grpcPort + "@" + peerPort,
                                      "127.0.0.2:1051@" + peer.getPort())))
                      .peers(
                          new dev.weir.core.cluster.peer.auth.PeerSettings(
                              new HostPort("127.0.0.1", peerPort),
                              TestConfigs.peers().secret(),
                              Optional.empty(),
                              Optional.empty(),
                              false))
                      .start())
          .isInstanceOf(BindException.class)
          .hasMessage(
              "cannot bind the HTTP listener at WEIR_HTTP_ADDRESS=weir-0.invalid:1050: its host"
                  + " does not resolve");
      assertThat(warmUpLines.list).as("the warm-up's log lines").isEmpty();
    } finally {
      warmUpLog.detachAppender(warmUpLines);
      peer.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }

    assertThat(peerCalls).as("the calls the node made to its peer").isEmpty();
    assertThatCode(() -> bind(grpcPort).close()).doesNotThrowAnyException();
  }

  /** Returns a server on 127.0.0.2 that records the method of every call and refuses it. */
  private static Server recordingServer(Queue<String> calls) throws Exception {
    return NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.2", 0))
        .fallbackHandlerRegistry(
            new io.grpc.HandlerRegistry() {
              @Override
              public ServerMethodDefinition<?, ?> lookupMethod(String method, String authority) {
                calls.add(method);
                return null;
              }
            })
        .build()
        .start();
  }
}
