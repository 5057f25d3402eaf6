package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FreePorts;
import dev.weir.core.testkit.Traceparent;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.Status;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A node exporting traces over OTLP/gRPC to a collector that never answers (it accepts the
 * connection and reads nothing) or is down (nothing listens on its port): every sampled call is
 * still decided within its deadline, all of them in a bounded time, the exporter's queue bounded
 * by {@code OTEL_BSP_MAX_QUEUE_SIZE} (the exporter tries, and its failures are logged), and the
 * node stops within {@link NodeTracing#CLOSE_SECONDS} and a margin, however long an export would
 * wait.
 */
class DeadCollectorTracingTest {

  private static final int CALLS = 300;

  /**
   * The time all {@link #CALLS} may take: several times what they need on a loaded machine, less
   * than a wait of 35 ms per call for the exporter would add.
   */
  private static final long CALLS_SECONDS = 10;

  private static final String TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";

  private final List<Socket> held = new CopyOnWriteArrayList<>();
  private ServerSocket silent;
  private WeirNode node;
  private ManagedChannel channel;

  @AfterEach
  void stop() throws Exception {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (node != null) {
      node.close();
    }
    if (silent != null) {
      silent.close();
    }
    for (Socket socket : held) {
      socket.close();
    }
  }

  @Test
  void collectorThatNeverAnswers_callsDecidedInTimeAndTheNodeStopsInBoundedTime()
      throws Exception {
    silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread acceptor =
        new Thread(
            () -> {
              try {
                while (true) {
                  held.add(silent.accept());
                }
              } catch (IOException closed) {
                // The test is over.
              }
            },
            "silent-collector");
    acceptor.setDaemon(true);
    acceptor.start();

    callsAnsweredThenBoundedStop(silent.getLocalPort());

    assertThat(held).as("connections the exporter opened to the silent collector").isNotEmpty();
  }

  @Test
  void collectorDown_callsDecidedInTimeAndTheNodeStopsInBoundedTime() throws Exception {
    Logger otel = Logger.getLogger("io.opentelemetry");
    List<LogRecord> failures = new CopyOnWriteArrayList<>();
    Handler recorder =
        new Handler() {
          @Override
          public void publish(LogRecord record) {
            if (record.getLevel().intValue() >= Level.WARNING.intValue()
                && String.valueOf(record.getMessage()).contains("span")) {
              failures.add(record);
            }
          }

          @Override
          public void flush() {}

          @Override
          public void close() {}
        };
    otel.addHandler(recorder);
    try {
      callsAnsweredThenBoundedStop(FreePorts.next());

      Await.until(
          Duration.ofSeconds(10),
          () -> !failures.isEmpty(),
          "the exporter's failure to send spans to the collector that is down, or spans dropped");
    } finally {
      otel.removeHandler(recorder);
    }
  }

  private void callsAnsweredThenBoundedStop(int collectorPort) throws Exception {
    TracingSettings tracing =
        TracingSettings.fromOtel(
            Map.of(
                "OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:" + collectorPort,
                "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc",
                "OTEL_BSP_SCHEDULE_DELAY", "10",
                "OTEL_BSP_MAX_QUEUE_SIZE", "8",
                "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "2"));
    node = WeirNode.builder(TestConfigs.loopback()).tracing(tracing).start();
    channel =
        NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort())
            .usePlaintext()
            .intercept(Traceparent.interceptor(TRACE_ID, "00f067aa0ba902b7"))
            .build();

    long started = System.nanoTime();
    for (int i = 0; i < CALLS; i++) {
      GetRateLimitsResp answer =
          V1Grpc.newBlockingStub(channel)
              .withDeadlineAfter(5, TimeUnit.SECONDS)
              .getRateLimits(
                  GetRateLimitsReq.newBuilder()
                      .addRequests(
                          RateLimitReq.newBuilder()
                              .setName("dead-collector")
                              .setUniqueKey("k")
                              .setHits(1)
                              .setLimit(CALLS / 2)
                              .setDuration(3_600_000))
                      .build());
      assertThat(answer.getResponses(0).getError()).as("call %d", i).isEmpty();
      assertThat(answer.getResponses(0).getStatus())
          .as("call %d", i)
          .isEqualTo(i < CALLS / 2 ? Status.UNDER_LIMIT : Status.OVER_LIMIT);
    }
    assertThat(Duration.ofNanos(System.nanoTime() - started))
        .as("%d calls one after another, each waiting for an export would take far longer", CALLS)
        .isLessThan(Duration.ofSeconds(CALLS_SECONDS));
    if (silent != null) {
      Await.until(Duration.ofSeconds(10), () -> !held.isEmpty(), "an export connection");
    }

    WeirNode stopping = node;
    node = null;
    assertTimeoutPreemptively(
        Duration.ofSeconds(NodeTracing.CLOSE_SECONDS + 10), stopping::close, "the node's stop");
  }
}
