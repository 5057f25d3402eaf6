package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.metrics.GrpcServerMetrics;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.RawGrpc;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerStreamTracer;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class TransportWarmUpTest {

  private static final Duration LONG = Duration.ofMinutes(1);
  private static final String TOKEN = "token-1";

  /** How each connection's calls ended on the server: its OK and its other endings. */
  private final Map<SocketAddress, int[]> endings = new ConcurrentHashMap<>();

  private final List<String> tokens = new CopyOnWriteArrayList<>();
  private final FakeClock clock = new FakeClock();
  private Duration clockStepPerCall = Duration.ZERO;
  private Server server;

  @AfterEach
  void stop() throws Exception {
    if (server != null) {
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  /**
   * The warm-up method as this stand-in server serves it (a node does not): served calls tell
   * their connection's address, so each connection's calls can be told apart.
   */
  private static final ServerServiceDefinition WARM_UP_SERVICE =
      ServerServiceDefinition.builder("weir.WarmUp")
          .addMethod(
              MethodDescriptor.<byte[], byte[]>newBuilder()
                  .setType(MethodDescriptor.MethodType.UNARY)
                  .setFullMethodName(GrpcServerMetrics.WARM_UP_METHOD)
                  .setRequestMarshaller(RawGrpc.BYTES)
                  .setResponseMarshaller(RawGrpc.BYTES)
                  .build(),
              ServerCalls.asyncUnaryCall(
                  (byte[] request, StreamObserver<byte[]> answer) -> {
                    answer.onNext(new byte[0]);
                    answer.onCompleted();
                  }))
          .build();

  /**
   * Starts a gRPC server serving the warm-up method that records how each connection's calls end
   * and the warm-up header of each call, and moves the fake clock by {@link #clockStepPerCall} per
   * call.
   */
  private InetSocketAddress serve() throws Exception {
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
            .directExecutor()
            .addService(WARM_UP_SERVICE)
            .addStreamTracerFactory(
                new ServerStreamTracer.Factory() {
                  @Override
                  public ServerStreamTracer newServerStreamTracer(String method, Metadata headers) {
                    tokens.add(headers.get(GrpcServerMetrics.WARM_UP_HEADER));
                    clock.advance(clockStepPerCall);
                    return new EndingTracer();
                  }
                })
            .build()
            .start();
    return new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getPort());
  }

  /** Records how one call ended under its connection's remote address. */
  private final class EndingTracer extends ServerStreamTracer {
    private volatile SocketAddress remote;

    @Override
    public void serverCallStarted(ServerCallInfo<?, ?> callInfo) {
      remote = callInfo.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
    }

    @Override
    public void streamClosed(Status status) {
      if (remote != null) {
        int[] counts = endings.computeIfAbsent(remote, r -> new int[2]);
        synchronized (counts) {
          counts[status.isOk() ? 0 : 1]++;
        }
      }
    }
  }

  /** Returns the connections whose calls ended with {@code ok} answers and {@code cut} others. */
  private long connectionsEnding(int ok, int cut) {
    return endings.values().stream()
        .filter(
            counts -> {
              synchronized (counts) {
                return counts[0] == ok && counts[1] == cut;
              }
            })
        .count();
  }

  @Test
  void run_openBudget_everyOtherConnectionAnsweredAndClosedWithOneCallInFlight()
      throws Exception {
    InetSocketAddress target = serve();

    TransportWarmUp.Result result = TransportWarmUp.run(target, LONG, clock, TOKEN);

    int answering = TransportWarmUp.CONNECTIONS / 2;
    assertThat(result.failure()).isNull();
    assertThat(result.connections()).isEqualTo(TransportWarmUp.CONNECTIONS);
    assertThat(result.answered()).isEqualTo(answering * TransportWarmUp.CALLS_PER_CONNECTION);
    Await.until(
        Duration.ofSeconds(10),
        () -> connectionsEnding(TransportWarmUp.CALLS_PER_CONNECTION, 1) >= answering,
        "each answered connection's open call to be cut off when it closed");
    assertThat(tokens).containsOnly(TOKEN);
  }

  @Test
  void run_budgetPassesDuringTheFirstConnection_opensNoOther() throws Exception {
    InetSocketAddress target = serve();
    clockStepPerCall = Duration.ofSeconds(1);

    TransportWarmUp.Result result =
        TransportWarmUp.run(
            target, Duration.ofSeconds(TransportWarmUp.CALLS_PER_CONNECTION), clock, TOKEN);

    assertThat(result.connections()).isEqualTo(1);
    assertThat(result.failure()).isNull();
  }

  @Test
  void run_zeroBudget_opensNoConnection() throws Exception {
    InetSocketAddress target = serve();

    TransportWarmUp.Result result = TransportWarmUp.run(target, Duration.ZERO, clock, TOKEN);

    assertThat(result.connections()).isZero();
    assertThat(tokens).isEmpty();
  }

  @Test
  void run_nothingListening_stopsWithTheConnectFailure() throws Exception {
    InetSocketAddress target;
    try (ServerSocket closed = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      target = new InetSocketAddress(InetAddress.getLoopbackAddress(), closed.getLocalPort());
    }

    TransportWarmUp.Result result = TransportWarmUp.run(target, LONG, clock, TOKEN);

    assertThat(result.connections()).isZero();
    assertThat(result.failure()).contains("ConnectException");
  }

  @Test
  void run_serverSendsGoaway_stopsWithoutWaitingOutTheBudget() throws Exception {
    byte[] goaway = {0, 0, 8, 0x7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    try (ServerSocket refusing = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      Thread peer =
          new Thread(
              () -> {
                try (Socket accepted = refusing.accept()) {
                  accepted.getInputStream().readNBytes(24);
                  accepted.getOutputStream().write(goaway);
                  accepted.getInputStream().readAllBytes();
                } catch (Exception e) {
                  // the test's assertions say what went wrong
                }
              });
      peer.setDaemon(true);
      peer.start();

      TransportWarmUp.Result result =
          TransportWarmUp.run(
              new InetSocketAddress(InetAddress.getLoopbackAddress(), refusing.getLocalPort()),
              LONG,
              clock,
              TOKEN);

      assertThat(result.connections()).isZero();
      assertThat(result.failure()).contains("GOAWAY");
    }
  }

  @Test
  void reachable_wildcardOfEachFamily_isThatFamilysLoopback() throws Exception {
    assertThat(TransportWarmUp.reachable(new InetSocketAddress("0.0.0.0", 1051)))
        .isEqualTo(new InetSocketAddress("127.0.0.1", 1051));
    InetSocketAddress v6 = TransportWarmUp.reachable(new InetSocketAddress("::", 1051));
    assertThat(v6.getAddress()).isInstanceOf(Inet6Address.class);
    assertThat(v6.getAddress().isLoopbackAddress()).isTrue();
    assertThat(v6.getPort()).isEqualTo(1051);
    InetSocketAddress specific = new InetSocketAddress("127.0.0.2", 1052);
    assertThat(TransportWarmUp.reachable(specific)).isSameAs(specific);
  }
}
