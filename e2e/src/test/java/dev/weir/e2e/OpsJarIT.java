package dev.weir.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.Struct;
import com.google.protobuf.util.JsonFormat;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.V1Grpc;
import dev.weir.tls.CertificateAuthority;
import dev.weir.tls.Pem;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
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
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509ExtendedTrustManager;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Operations of the real {@code weir.jar}: draining on SIGTERM, JSON logs, the metrics endpoint,
 * the status listener under mutual TLS.
 */
class OpsJarIT {

  private static final int SIGTERM_EXIT = 143;
  private static final int CLIENTS = 8;

  private final HttpClient http = HttpClient.newHttpClient();

  @TempDir Path certs;

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

  @Test
  void jar_mutualTlsWithStatusListener_probesAndMetricsNeedNoClientCertificate() throws Exception {
    int statusPort = NodeProcess.freePort();
    Path clientCa = certs.resolve("client-ca.pem");
    Files.writeString(
        clientCa,
        Pem.encode(CertificateAuthority.create("client-ca", Duration.ofDays(1)).certificate()));
    Map<String, String> env =
        Map.of(
            "WEIR_TLS_AUTO", "true",
            "WEIR_TLS_CA", clientCa.toString(),
            "WEIR_TLS_CLIENT_AUTH", "require-and-verify",
            "WEIR_STATUS_HTTP_ADDRESS", "127.0.0.1:" + statusPort);
    HttpClient withoutCertificate =
        HttpClient.newBuilder().sslContext(trustingAnyServer()).build();
    try (NodeProcess node = NodeProcess.start(env)) {
      URI status = URI.create("https://127.0.0.1:" + statusPort);
      node.awaitHealthy(withoutCertificate, status.resolve("/v1/HealthCheck"));

      HttpResponse<String> health = get(withoutCertificate, status.resolve("/v1/HealthCheck"));
      HttpResponse<String> ready = get(withoutCertificate, status.resolve("/readyz"));
      HttpResponse<String> metrics = get(withoutCertificate, status.resolve("/metrics"));
      HttpResponse<String> rateLimits =
          withoutCertificate.send(
              HttpRequest.newBuilder(status.resolve("/v1/GetRateLimits"))
                  .POST(HttpRequest.BodyPublishers.ofString("{\"requests\":[]}"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());

      assertThat(health.statusCode()).isEqualTo(200);
      assertThat(health.body()).contains("\"status\":\"healthy\"");
      assertThat(ready.statusCode()).isEqualTo(200);
      assertThat(metrics.statusCode()).isEqualTo(200);
      assertThat(metrics.body()).contains("weir_peers");
      assertThat(rateLimits.statusCode()).isEqualTo(404);
      assertThatThrownBy(
              () ->
                  get(
                      withoutCertificate,
                      URI.create("https://127.0.0.1:" + node.httpPort + "/v1/HealthCheck")))
          .isInstanceOf(IOException.class);
    }
  }

  private static HttpResponse<String> get(HttpClient client, URI uri) throws Exception {
    return client.send(HttpRequest.newBuilder(uri).build(), HttpResponse.BodyHandlers.ofString());
  }

  /** A client context that presents no certificate and accepts the node's generated one. */
  private static SSLContext trustingAnyServer() throws Exception {
    X509ExtendedTrustManager any =
        new X509ExtendedTrustManager() {
          @Override
          public void checkClientTrusted(X509Certificate[] chain, String authType) {}

          @Override
          public void checkServerTrusted(X509Certificate[] chain, String authType) {}

          @Override
          public void checkClientTrusted(X509Certificate[] chain, String authType, Socket s) {}

          @Override
          public void checkServerTrusted(X509Certificate[] chain, String authType, Socket s) {}

          @Override
          public void checkClientTrusted(X509Certificate[] chain, String type, SSLEngine e) {}

          @Override
          public void checkServerTrusted(X509Certificate[] chain, String type, SSLEngine e) {}

          @Override
          public X509Certificate[] getAcceptedIssuers() {
            return new X509Certificate[0];
          }
        };
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(null, new TrustManager[] {any}, null);
    return context;
  }
}
