package dev.weir.server;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.EnvReader;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.store.ClockBucketStore;
import dev.weir.core.testkit.FakeClock;
import dev.weir.http.HttpSettings;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.Status;
import dev.weir.proto.gubernator.V1Grpc;
import dev.weir.tls.CertificateAuthority;
import dev.weir.tls.Pem;
import dev.weir.tls.TlsSettings;
import io.grpc.Grpc;
import io.grpc.ManagedChannel;
import io.grpc.TlsChannelCredentials;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StatusListenerTest {

  private static final WeirConfig CONFIG = TestConfigs.loopback();
  private static final Duration YEAR = Duration.ofDays(365);

  @TempDir Path dir;
  private final FakeClock clock = new FakeClock();
  private WeirNode node;
  private ManagedChannel channel;

  @AfterEach
  void stop() throws Exception {
    sleeper.release();
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (node != null) {
      node.close();
    }
  }

  private final HeldSleeper sleeper = new HeldSleeper();

  private void start(OpsSettings ops) throws Exception {
    node =
        WeirNode.builder(CONFIG)
            .ops(ops)
            .sleeper(sleeper)
            .clock(clock)
            .store(new ClockBucketStore(clock, 1000))
            .start();
  }

  private static HttpResponse<String> send(HttpClient client, HttpRequest request)
      throws Exception {
    return client.send(request, HttpResponse.BodyHandlers.ofString());
  }

  private static HttpRequest get(String scheme, int port, String path) {
    return HttpRequest.newBuilder(URI.create(scheme + "://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(10))
        .build();
  }

  private static HttpRequest post(String scheme, int port, String path, String body) {
    return HttpRequest.newBuilder(URI.create(scheme + "://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(10))
        .POST(HttpRequest.BodyPublishers.ofString(body))
        .build();
  }

  private static GetRateLimitsReq request(String key) {
    return GetRateLimitsReq.newBuilder()
        .addRequests(
            RateLimitReq.newBuilder()
                .setName("n")
                .setUniqueKey(key)
                .setHits(1)
                .setLimit(5)
                .setDuration(60_000))
        .build();
  }

  private static final String GET_RATE_LIMITS =
      "{\"requests\":[{\"name\":\"n\",\"unique_key\":\"h\",\"hits\":1,\"limit\":5,"
          + "\"duration\":60000}]}";

  private static SSLContext clientContext(Path caFile, Path[] identity) throws Exception {
    KeyStore trust = KeyStore.getInstance("PKCS12");
    trust.load(null, null);
    trust.setCertificateEntry("ca", Pem.certificates(caFile)[0]);
    TrustManagerFactory trustFactory =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    trustFactory.init(trust);
    KeyManagerFactory keyFactory = null;
    if (identity != null) {
      KeyStore keys = KeyStore.getInstance("PKCS12");
      keys.load(null, null);
      keys.setKeyEntry(
          "client", Pem.privateKey(identity[1]), new char[0], Pem.certificates(identity[0]));
      keyFactory = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      keyFactory.init(keys, new char[0]);
    }
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(
        keyFactory == null ? null : keyFactory.getKeyManagers(),
        trustFactory.getTrustManagers(),
        null);
    return context;
  }

  @Test
  void start_mutualTls_statusServesProbesAndMetricsWithoutClientCertificate() throws Exception {
    CertificateAuthority ca = CertificateAuthority.create("test-ca", YEAR);
    Path caFile = dir.resolve("ca.pem");
    Files.writeString(caFile, Pem.encode(ca.certificate()));
    Path[] server = PemFiles.writeIdentity(dir, ca, "server");
    Path[] client = PemFiles.writeIdentity(dir, ca, "client");
    Map<String, String> env = new HashMap<>();
    env.put("WEIR_TLS_CERT", server[0].toString());
    env.put("WEIR_TLS_KEY", server[1].toString());
    env.put("WEIR_TLS_CA", caFile.toString());
    env.put("WEIR_TLS_CLIENT_AUTH", "require-and-verify");
    env.put("WEIR_STATUS_HTTP_ADDRESS", "127.0.0.1:0");
    start(OpsSettings.from(new EnvReader(env)));
    channel =
        Grpc.newChannelBuilderForAddress(
                "127.0.0.1",
                node.grpcPort(),
                TlsChannelCredentials.newBuilder()
                    .keyManager(client[0].toFile(), client[1].toFile())
                    .trustManager(caFile.toFile())
                    .build())
            .build();
    assertThat(
            V1Grpc.newBlockingStub(channel).getRateLimits(request("k")).getResponses(0).getStatus())
        .isEqualTo(Status.UNDER_LIMIT);
    HttpClient anonymous = HttpClient.newBuilder().sslContext(clientContext(caFile, null)).build();
    HttpClient withCertificate =
        HttpClient.newBuilder().sslContext(clientContext(caFile, client)).build();
    int status = node.statusPort().orElseThrow();

    HttpResponse<String> health = send(anonymous, get("https", status, "/v1/HealthCheck"));
    HttpResponse<String> live = send(anonymous, get("https", status, "/v1/LiveCheck"));
    HttpResponse<String> metrics = send(anonymous, get("https", status, "/metrics"));
    HttpResponse<String> api =
        send(anonymous, post("https", status, "/v1/GetRateLimits", GET_RATE_LIMITS));

    assertThat(status).isNotIn(node.httpPort(), node.grpcPort());
    assertThat(health.statusCode()).isEqualTo(200);
    assertThat(health.body()).startsWith("{\"status\":\"healthy\"").contains("\"peer_count\":1");
    assertThat(live.statusCode()).isEqualTo(200);
    assertThat(live.body()).isEqualTo("{}");
    assertThat(metrics.statusCode()).isEqualTo(200);
    assertThat(metrics.headers().firstValue("Content-Type"))
        .hasValue("text/plain; version=0.0.4; charset=utf-8");
    assertThat(metrics.body())
        .contains("weir_checks_total{result=\"under_limit\"} 1.0")
        .contains("# TYPE weir_checks_total counter");
    assertThat(api.statusCode()).isEqualTo(404);
    assertThatThrownBy(() -> send(anonymous, get("https", node.httpPort(), "/v1/HealthCheck")))
        .isInstanceOf(IOException.class);
    assertThat(send(withCertificate, get("https", node.httpPort(), "/v1/HealthCheck")).statusCode())
        .isEqualTo(200);
  }

  @Test
  void start_withoutTls_statusServesPlainHttpProbesAndMetricsOnly() throws Exception {
    start(
        new OpsSettings(
            InputLimits.DEFAULTS,
            Duration.ZERO,
            Duration.ofSeconds(5),
            TlsSettings.DISABLED,
            Optional.of(new HostPort("127.0.0.1", 0))));
    HttpClient http = HttpClient.newHttpClient();
    int status = node.statusPort().orElseThrow();
    assertThat(send(http, post("http", node.httpPort(), "/v1/GetRateLimits", GET_RATE_LIMITS)).statusCode())
        .isEqualTo(200);

    HttpResponse<String> health = send(http, get("http", status, "/v1/HealthCheck"));
    HttpResponse<String> metrics = send(http, get("http", status, "/metrics"));
    HttpResponse<String> api = send(http, post("http", status, "/v1/GetRateLimits", GET_RATE_LIMITS));
    HttpResponse<String> envoy = send(http, post("http", status, "/json", "{}"));

    assertThat(health.statusCode()).isEqualTo(200);
    assertThat(health.body()).startsWith("{\"status\":\"healthy\"");
    assertThat(send(http, get("http", status, "/v1/LiveCheck")).statusCode()).isEqualTo(200);
    assertThat(send(http, get("http", status, "/readyz")).body()).startsWith("{\"ready\":true,");
    assertThat(metrics.statusCode()).isEqualTo(200);
    assertThat(metrics.body()).contains("weir_checks_total{result=\"under_limit\"} 1.0");
    assertThat(api.statusCode()).isEqualTo(404);
    assertThat(api.body()).contains("\"code\":5");
    assertThat(envoy.statusCode()).isEqualTo(404);
  }

  @Test
  void start_httpPortFullOfStalledClients_requestsAndStatusProbesStillAnswered() throws Exception {
    start(
        new OpsSettings(
            InputLimits.DEFAULTS,
            Duration.ZERO,
            Duration.ofSeconds(5),
            TlsSettings.DISABLED,
            HttpSettings.defaults().withMaxConnections(20),
            Optional.of(new HostPort("127.0.0.1", 0))));
    List<Socket> stalled = new ArrayList<>();
    try {
      for (int i = 0; i < 20; i++) {
        Socket socket = new Socket(InetAddress.getLoopbackAddress(), node.httpPort());
        socket
            .getOutputStream()
            .write("POST /v1/GetRateLimits HTTP/1.1\r\nHost: x\r\n".getBytes(US_ASCII));
        stalled.add(socket);
      }
      HttpClient http = HttpClient.newHttpClient();
      int status = node.statusPort().orElseThrow();

      HttpResponse<String> api =
          send(http, post("http", node.httpPort(), "/v1/GetRateLimits", GET_RATE_LIMITS));
      HttpResponse<String> health = send(http, get("http", status, "/v1/HealthCheck"));
      HttpResponse<String> live = send(http, get("http", status, "/v1/LiveCheck"));
      HttpResponse<String> metrics = send(http, get("http", status, "/metrics"));

      assertThat(api.statusCode()).isEqualTo(200);
      assertThat(health.statusCode()).isEqualTo(200);
      assertThat(live.statusCode()).isEqualTo(200);
      assertThat(metrics.body())
          .containsPattern(
              "weir_requests_refused_total\\{reason=\"http_too_many_connections\"\\} [1-9]");
    } finally {
      for (Socket socket : stalled) {
        socket.close();
      }
    }
  }

  @Test
  void start_statusAddressUnset_noStatusListener() throws Exception {
    start(OpsSettings.DEFAULTS);

    assertThat(node.statusPort()).isEmpty();
  }

  @Test
  void close_gracefulDelay_statusHealthCheckFailsFirstThenInterruptClosesListener()
      throws Exception {
    start(
        new OpsSettings(
            InputLimits.DEFAULTS,
            Duration.ofSeconds(60),
            Duration.ofSeconds(60),
            TlsSettings.DISABLED,
            Optional.of(new HostPort("127.0.0.1", 0))));
    HttpClient http = HttpClient.newHttpClient();
    int status = node.statusPort().orElseThrow();
    int main = node.httpPort();
    assertThat(send(http, get("http", status, "/v1/HealthCheck")).statusCode()).isEqualTo(200);

    Thread closing = new Thread(node::close, "test-close");
    closing.start();
    assertThat(sleeper.awaitSleeping()).isEqualTo(Duration.ofSeconds(60));
    HttpResponse<String> draining = send(http, get("http", status, "/v1/HealthCheck"));

    assertThat(draining.statusCode()).isEqualTo(503);
    assertThat(draining.body()).contains("shutting down");
    assertThat(send(http, get("http", status, "/v1/LiveCheck")).statusCode()).isEqualTo(200);
    assertThat(closing.isAlive()).isTrue();
    closing.interrupt();
    closing.join(TimeUnit.SECONDS.toMillis(20));
    assertThat(closing.isAlive()).as("close() still running after the interrupt").isFalse();
    assertThatThrownBy(() -> new Socket(InetAddress.getLoopbackAddress(), status).close())
        .isInstanceOf(ConnectException.class);
    assertThatThrownBy(() -> new Socket(InetAddress.getLoopbackAddress(), main).close())
        .isInstanceOf(ConnectException.class);
  }

  @Test
  void from_gubernatorAlias_statusAddressRead() {
    OpsSettings ops =
        OpsSettings.from(new EnvReader(Map.of("GUBER_STATUS_HTTP_ADDRESS", "0.0.0.0:1052")));

    assertThat(ops.statusAddress()).hasValue(new HostPort("0.0.0.0", 1052));
    assertThat(OpsSettings.from(new EnvReader(Map.of())).statusAddress()).isEmpty();
  }
}
