package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.time.Clock;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerStreamTracer;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class TransportWarmUpTest {

  private static final Duration LONG = Duration.ofMinutes(1);

  private final AtomicInteger answered = new AtomicInteger();
  private final AtomicInteger cancelled = new AtomicInteger();
  private Server server;

  @AfterEach
  void stop() throws Exception {
    if (server != null) {
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  /** Starts a gRPC server with health checks that counts how its calls end. */
  private InetSocketAddress serve() throws Exception {
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
            .directExecutor()
            .addService(new HealthStatusManager().getHealthService())
            .addStreamTracerFactory(
                new ServerStreamTracer.Factory() {
                  @Override
                  public ServerStreamTracer newServerStreamTracer(String method, Metadata headers) {
                    return new ServerStreamTracer() {
                      @Override
                      public void streamClosed(Status status) {
                        (status.isOk() ? answered : cancelled).incrementAndGet();
                      }
                    };
                  }
                })
            .build()
            .start();
    return new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getPort());
  }

  @Test
  void run_openBudget_opensEveryConnectionAndLeavesCallsInFlightOnClose() throws Exception {
    InetSocketAddress target = serve();

    TransportWarmUp.Result result = TransportWarmUp.run(target, LONG, new FakeClock());

    int answering = TransportWarmUp.CONNECTIONS / 2;
    assertThat(result.failure()).isNull();
    assertThat(result.connections()).isEqualTo(TransportWarmUp.CONNECTIONS);
    assertThat(result.answered()).isEqualTo(answering * TransportWarmUp.CALLS_PER_CONNECTION);
    Await.until(
        Duration.ofSeconds(10),
        () -> answered.get() >= result.answered(),
        "the server to close every call the warm-up read an answer to");
    Await.until(
        Duration.ofSeconds(10),
        () -> cancelled.get() >= answering,
        "the open call of each answered connection to be cancelled when it closed");
  }

  @Test
  void run_budgetPassed_stopsOpeningConnections() throws Exception {
    InetSocketAddress target = serve();
    Clock ticking = new TickingClock(Duration.ofSeconds(1));

    TransportWarmUp.Result result = TransportWarmUp.run(target, Duration.ofMillis(2_500), ticking);

    assertThat(result.connections()).isEqualTo(2);
    assertThat(result.failure()).isNull();
  }

  @Test
  void run_zeroBudget_opensNoConnection() throws Exception {
    InetSocketAddress target = serve();

    TransportWarmUp.Result result = TransportWarmUp.run(target, Duration.ZERO, new FakeClock());

    assertThat(result.connections()).isZero();
    assertThat(answered.get() + cancelled.get()).isZero();
  }

  @Test
  void run_nothingListening_stopsWithTheConnectFailure() throws Exception {
    InetSocketAddress target;
    try (ServerSocket closed = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      target = new InetSocketAddress(InetAddress.getLoopbackAddress(), closed.getLocalPort());
    }

    TransportWarmUp.Result result = TransportWarmUp.run(target, LONG, new FakeClock());

    assertThat(result.connections()).isZero();
    assertThat(result.failure()).contains("ConnectException");
  }

  @Test
  void run_serverSendsGoaway_stopsWithoutWaitingOutTheBudget() throws Exception {
    byte[] goaway = {0, 0, 8, 0x7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    try (ServerSocket refusing = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      Thread server =
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
      server.setDaemon(true);
      server.start();

      TransportWarmUp.Result result =
          TransportWarmUp.run(
              new InetSocketAddress(InetAddress.getLoopbackAddress(), refusing.getLocalPort()),
              LONG,
              new FakeClock());

      assertThat(result.connections()).isZero();
      assertThat(result.failure()).contains("GOAWAY");
    }
  }

  @Test
  void reachable_wildcardBind_isLoopback() {
    assertThat(TransportWarmUp.reachable(new InetSocketAddress(1051)))
        .isEqualTo(new InetSocketAddress(InetAddress.getLoopbackAddress(), 1051));
    InetSocketAddress specific = new InetSocketAddress(InetAddress.getLoopbackAddress(), 1052);
    assertThat(TransportWarmUp.reachable(specific)).isSameAs(specific);
  }

  @Test
  void budget_readsWeirWarmup() {
    assertThat(TransportWarmUp.budget(new EnvReader(Map.of())))
        .isEqualTo(TransportWarmUp.DEFAULT_BUDGET);
    assertThat(TransportWarmUp.budget(new EnvReader(Map.of("WEIR_WARMUP", "0s"))))
        .isEqualTo(Duration.ZERO);
    assertThatThrownBy(
            () -> TransportWarmUp.budget(new EnvReader(Map.of("WEIR_WARMUP", "2m"))))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("WEIR_WARMUP='2m' is not valid");
  }

  /** A clock whose monotonic reading moves by {@code step} each time it is read. */
  private static final class TickingClock implements Clock {
    private final long stepNanos;
    private long nanos;

    TickingClock(Duration step) {
      this.stepNanos = step.toNanos();
    }

    @Override
    public long wallMillis() {
      return 0;
    }

    @Override
    public long monotonicNanos() {
      long now = nanos;
      nanos += stepNanos;
      return now;
    }
  }
}
