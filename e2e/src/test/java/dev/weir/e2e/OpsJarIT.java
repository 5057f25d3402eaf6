package dev.weir.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Struct;
import com.google.protobuf.util.JsonFormat;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Operations of the real {@code weir.jar}: draining on SIGTERM, JSON logs, the metrics endpoint. */
class OpsJarIT {

  private static final int SIGTERM_EXIT = 143;
  private static final int CLIENTS = 8;

  private final HttpClient http = HttpClient.newHttpClient();

  private static GetRateLimitsReq request(int client) {
    return GetRateLimitsReq.newBuilder()
        .addRequests(
            RateLimitReq.newBuilder()
                .setName("drain")
                .setUniqueKey("client-" + client)
                .setHits(1)
                .setLimit(1_000_000)
                .setDuration(60_000))
        .build();
  }

  @Test
  void jar_sigtermUnderLoad_readinessFailsFirstAndNoCallFails() throws Exception {
    Map<String, String> env =
        Map.of("WEIR_GRACEFUL_TERMINATION_DELAY", "2s", "WEIR_LOG_FORMAT", "json");
    try (NodeProcess node = NodeProcess.start(env)) {
      node.awaitHealthy(http);
      ManagedChannel channel =
          NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort).usePlaintext().build();
      AtomicBoolean stopSending = new AtomicBoolean();
      AtomicBoolean terminated = new AtomicBoolean();
      AtomicLong okAfterSigterm = new AtomicLong();
      ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
      ExecutorService pool = Executors.newFixedThreadPool(CLIENTS);
      List<Future<?>> clients = new ArrayList<>();
      for (int c = 0; c < CLIENTS; c++) {
        int client = c;
        clients.add(
            pool.submit(
                () -> {
                  V1Grpc.V1BlockingStub stub = V1Grpc.newBlockingStub(channel);
                  while (!stopSending.get()) {
                    try {
                      stub.withDeadlineAfter(10, TimeUnit.SECONDS).getRateLimits(request(client));
                      if (terminated.get()) {
                        okAfterSigterm.incrementAndGet();
                      }
                    } catch (RuntimeException e) {
                      failures.add(e);
                      return;
                    }
                  }
                }));
      }
      HealthGrpc.HealthBlockingStub health = HealthGrpc.newBlockingStub(channel);
      Thread.sleep(200);

      terminated.set(true);
      Future<Integer> exit = Executors.newSingleThreadExecutor().submit(
          () -> node.terminate(Duration.ofSeconds(30)));
      while (health.check(HealthCheckRequest.getDefaultInstance()).getStatus()
          == ServingStatus.SERVING) {
        Thread.sleep(10);
      }
      stopSending.set(true);
      for (Future<?> client : clients) {
        client.get(30, TimeUnit.SECONDS);
      }
      pool.shutdown();
      int status = exit.get(40, TimeUnit.SECONDS);
      channel.shutdownNow();

      assertThat(failures).isEmpty();
      assertThat(okAfterSigterm.get()).isPositive();
      assertThat(status).isEqualTo(SIGTERM_EXIT);
      assertThat(node.stdout()).contains("not ready; serving for PT2S before stopping");
    }
  }

  @Test
  void jar_jsonLogFormat_everyLineJsonAndSecretsMasked() throws Exception {
    Map<String, String> env = Map.of("WEIR_LOG_FORMAT", "json", "WEIR_ETCD_PASSWORD", "hunter2");
    try (NodeProcess node = NodeProcess.start(env)) {
      node.awaitHealthy(http);
      HttpResponse<String> metrics =
          http.send(
              HttpRequest.newBuilder(node.httpUri("/metrics")).build(),
              HttpResponse.BodyHandlers.ofString());
      node.terminate(Duration.ofSeconds(30));

      List<String> lines = node.stdout().lines().filter(l -> !l.isBlank()).toList();
      assertThat(lines).isNotEmpty();
      for (String line : lines) {
        Struct.Builder json = Struct.newBuilder();
        JsonFormat.parser().merge(line, json);
        assertThat(json.getFieldsMap()).containsKeys("level", "loggerName", "formattedMessage");
      }
      assertThat(node.stdout())
          .contains("Weir node started")
          .contains("WEIR_ETCD_PASSWORD=****")
          .doesNotContain("hunter2");
      assertThat(metrics.statusCode()).isEqualTo(200);
      assertThat(metrics.body()).contains("weir_checks_total", "jvm_memory_used_bytes");
    }
  }
}
