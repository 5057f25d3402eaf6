package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.WeirConfig;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.store.ClockBucketStore;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.Status;
import dev.weir.proto.gubernator.V1Grpc;
import dev.weir.tls.ClientAuth;
import dev.weir.tls.Pem;
import dev.weir.tls.TlsIdentity;
import dev.weir.tls.TlsSettings;
import io.grpc.Grpc;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.net.URI;
import java.net.Socket;
import java.net.InetAddress;
import java.net.ConnectException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class WeirNodeOpsTest {

  private static final WeirConfig CONFIG = TestConfigs.loopback();

  private final FakeClock clock = new FakeClock();
  private final HttpClient http = HttpClient.newHttpClient();
  private WeirNode node;
  private ManagedChannel channel;

  private final HeldSleeper sleeper = new HeldSleeper();

  private void start(OpsSettings ops) throws Exception {
    node =
        WeirNode.builder(CONFIG)
            .ops(ops)
            .sleeper(sleeper)
            .clock(clock)
            .store(new ClockBucketStore(clock, 1000))
            .start();
    channel = NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort()).usePlaintext().build();
  }

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

  private static GetRateLimitsReq request(String key) {
    return GetRateLimitsReq.newBuilder()
        .addRequests(
            RateLimitReq.newBuilder()
                .setName("n")
                .setUniqueKey(key)
                .setHits(1)
                .setLimit(2)
                .setDuration(60_000))
        .build();
  }

  private HttpResponse<String> get(String path) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort() + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> post(String path, String body) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort() + path))
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private String scrapeUntil(Predicate<String> ready) throws Exception {
    return MetricsScrape.until(http, node.httpPort(), ready);
  }

  @Test
  void metrics_afterTraffic_callsItemsCacheAndJvmReported() throws Exception {
    start(OpsSettings.DEFAULTS);
    V1Grpc.V1BlockingStub stub = V1Grpc.newBlockingStub(channel);
    for (int i = 0; i < 3; i++) {
      stub.getRateLimits(request("k"));
    }
    post("/v1/GetRateLimits", "{\"requests\":[{\"name\":\"n\",\"unique_key\":\"h\",\"hits\":1,\"limit\":5,\"duration\":60000}]}");
    String grpcCount =
        "weir_grpc_requests_seconds_count{code=\"OK\",method=\"pb.gubernator.V1/GetRateLimits\"} 3";

    HttpResponse<String> response = get("/metrics");
    String text = scrapeUntil(t -> t.contains(grpcCount));

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.headers().firstValue("Content-Type")).hasValue("text/plain; version=0.0.4; charset=utf-8");
    assertThat(text)
        .contains(grpcCount)
        .contains("weir_http_requests_seconds_count{route=\"/v1/GetRateLimits\",status=\"200\"} 1")
        .contains("weir_checks_total{result=\"under_limit\"} 3.0")
        .contains("weir_checks_total{result=\"over_limit\"} 1.0")
        .contains("weir_cache_size 2.0")
        .contains("weir_cache_access_total{type=\"hit\"} 2.0")
        .contains("weir_cache_access_total{type=\"miss\"} 2.0")
        .contains("weir_checks_in_flight 0.0")
        .contains("jvm_memory_used_bytes")
        .contains("jvm_gc_")
        .contains("process_uptime_seconds")
        .doesNotContain("unique_key");
  }

  @Test
  void version_getVersionAndBuildInfoGauge_nameThisBuild() throws Exception {
    start(OpsSettings.DEFAULTS);

    HttpResponse<String> version = get("/version");
    String metrics = get("/metrics").body();

    assertThat(version.statusCode()).isEqualTo(200);
    assertThat(version.body()).isEqualTo("{\"version\":\"" + BuildInfo.version() + "\"}");
    assertThat(metrics)
        .contains("# HELP weir_build_info Always 1; the version label names this build of Weir")
        .contains("weir_build_info{version=\"" + BuildInfo.version() + "\"} 1");
  }

  @Test
  void limits_oversizedInputs_refusedWithClearErrorsAndCounted() throws Exception {
    start(
        new OpsSettings(
            new InputLimits(65_536, 2048, 1024, 1024, 64, 1024), Duration.ZERO, Duration.ofSeconds(5)));
    V1Grpc.V1BlockingStub stub = V1Grpc.newBlockingStub(channel);

    assertThatThrownBy(() -> stub.getRateLimits(request("k".repeat(70_000))))
        .isInstanceOf(StatusRuntimeException.class)
        .hasMessageStartingWith("RESOURCE_EXHAUSTED");
    assertThat(stub.getRateLimits(request("k".repeat(2000))).getResponses(0).getError())
        .isEqualTo("field 'unique_key' is 2000 bytes long; at most 1024 are allowed (WEIR_MAX_KEY_LENGTH)");
    HttpResponse<String> tooBig = post("/v1/GetRateLimits", " ".repeat(3000));
    assertThat(tooBig.statusCode()).isEqualTo(413);
    assertThat(tooBig.body()).contains("larger than the 2048 bytes allowed (WEIR_HTTP_MAX_BODY_SIZE)");

    String text =
        scrapeUntil(t -> t.contains("weir_requests_refused_total{reason=\"grpc_message_too_large\"} 1.0"));
    assertThat(text)
        .contains("weir_requests_refused_total{reason=\"grpc_message_too_large\"} 1.0")
        .contains("weir_requests_refused_total{reason=\"field_too_long\"} 1.0")
        .contains("weir_requests_refused_total{reason=\"http_body_too_large\"} 1.0")
        .contains("weir_http_requests_seconds_count{route=\"/v1/GetRateLimits\",status=\"413\"} 1");
  }

  @Test
  void close_gracefulDelay_readinessFailsFirstWhileCallsStillAnsweredThenStops() throws Exception {
    start(new OpsSettings(InputLimits.DEFAULTS, Duration.ofSeconds(60), Duration.ofSeconds(5)));
    HealthGrpc.HealthBlockingStub health = HealthGrpc.newBlockingStub(channel);
    assertThat(health.check(HealthCheckRequest.getDefaultInstance()).getStatus())
        .isEqualTo(ServingStatus.SERVING);
    int grpc = node.grpcPort();

    Thread closing = new Thread(node::close, "test-close");
    closing.start();

    assertThat(sleeper.awaitSleeping()).isEqualTo(Duration.ofSeconds(60));
    assertThat(health.check(HealthCheckRequest.getDefaultInstance()).getStatus())
        .isEqualTo(ServingStatus.NOT_SERVING);
    HttpResponse<String> httpHealth = get("/v1/HealthCheck");
    assertThat(httpHealth.statusCode()).isEqualTo(503);
    assertThat(httpHealth.body()).contains("shutting down");
    assertThat(V1Grpc.newBlockingStub(channel).getRateLimits(request("k")).getResponses(0).getStatus())
        .isEqualTo(Status.UNDER_LIMIT);
    assertThat(closing.isAlive()).isTrue();
    sleeper.release();
    closing.join(TimeUnit.SECONDS.toMillis(20));
    assertThat(closing.isAlive()).as("close() still running after the delay").isFalse();
    assertThatThrownBy(() -> new Socket(InetAddress.getLoopbackAddress(), grpc).close())
        .isInstanceOf(ConnectException.class);
  }

  @Test
  void close_interruptedDuringGracefulDelay_stopsPromptly() throws Exception {
    start(new OpsSettings(InputLimits.DEFAULTS, Duration.ofSeconds(60), Duration.ofSeconds(60)));
    int http = node.httpPort();
    Thread closing = new Thread(node::close, "test-close");
    closing.start();
    assertThat(sleeper.awaitSleeping()).isEqualTo(Duration.ofSeconds(60));

    closing.interrupt();
    closing.join(TimeUnit.SECONDS.toMillis(20));

    assertThat(closing.isAlive()).as("close() still running after the interrupt").isFalse();
    assertThatThrownBy(() -> new Socket(InetAddress.getLoopbackAddress(), http).close())
        .isInstanceOf(ConnectException.class);
  }

  private void startAutoTls(Optional<java.nio.file.Path> caFile) throws Exception {
    startAutoTls(CONFIG, caFile);
  }

  private void startAutoTls(WeirConfig config, Optional<java.nio.file.Path> caFile)
      throws Exception {
    TlsSettings tls =
        new TlsSettings(
            Optional.empty(),
            Optional.empty(),
            Optional.empty(),
            ClientAuth.NONE,
            "TLSv1.3",
            true,
            Duration.ofSeconds(10));
    node =
        WeirNode.builder(config)
            .ops(new OpsSettings(InputLimits.DEFAULTS, Duration.ZERO, Duration.ofSeconds(5), tls))
            .writeAutoCa(caFile)
            .clock(clock)
            .store(new ClockBucketStore(clock, 1000))
            .start();
  }

  @Test
  void tlsAuto_caFile_grpcAndHttpsClientsTrustingOnlyThatFileConnect(
      @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
    java.nio.file.Path caFile = dir.resolve("weir-ca.pem");
    startAutoTls(Optional.of(caFile));
    channel =
        Grpc.newChannelBuilderForAddress(
                "localhost",
                node.grpcPort(),
                TlsChannelCredentials.newBuilder().trustManager(caFile.toFile()).build())
            .build();
    java.security.KeyStore trust = java.security.KeyStore.getInstance("PKCS12");
    trust.load(null, null);
    trust.setCertificateEntry("weir", Pem.certificates(caFile)[0]);
    javax.net.ssl.TrustManagerFactory factory =
        javax.net.ssl.TrustManagerFactory.getInstance(
            javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
    factory.init(trust);
    javax.net.ssl.SSLContext context = javax.net.ssl.SSLContext.getInstance("TLS");
    context.init(null, factory.getTrustManagers(), null);

    HttpResponse<String> health =
        HttpClient.newBuilder()
            .sslContext(context)
            .build()
            .send(
                HttpRequest.newBuilder(
                        URI.create("https://localhost:" + node.httpPort() + "/v1/HealthCheck"))
                    .build(),
                HttpResponse.BodyHandlers.ofString());

    assertThat(Pem.certificates(caFile))
        .containsExactly(node.tlsIdentity().orElseThrow().generatedCa().orElseThrow());
    assertThat(V1Grpc.newBlockingStub(channel).getRateLimits(request("k")).getResponses(0))
        .extracting(r -> r.getStatus())
        .isEqualTo(Status.UNDER_LIMIT);
    assertThat(health.statusCode()).isEqualTo(200);
  }

  @Test
  void tlsAuto_noFileNamed_writtenToTheTempDirectoryUnderTheGrpcPort() throws Exception {
    startAutoTls(Optional.empty());
    channel = NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort()).usePlaintext().build();
    java.nio.file.Path expected =
        java.nio.file.Path.of(
            System.getProperty("java.io.tmpdir"), "weir-auto-ca-" + node.grpcPort() + ".pem");
    try {
      assertThat(AutoCaFile.byDefault(node.grpcPort())).isEqualTo(expected);
      assertThat(Pem.certificates(expected))
          .containsExactly(node.tlsIdentity().orElseThrow().generatedCa().orElseThrow());
    } finally {
      java.nio.file.Files.deleteIfExists(expected);
    }
  }

  @Test
  void tlsAuto_grpcPortInUse_failsLeavingTheCaFileAsItWas(
      @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
    java.nio.file.Path caFile = dir.resolve("weir-ca.pem");
    String running =
        "-----BEGIN CERTIFICATE-----\nthe CA of the node holding the port\n"
            + "-----END CERTIFICATE-----\n";
    java.nio.file.Files.writeString(caFile, running);
    try (java.net.ServerSocket taken =
        new java.net.ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      WeirConfig config =
          new WeirConfig(
              new dev.weir.core.config.HostPort("127.0.0.1", taken.getLocalPort()),
              new dev.weir.core.config.HostPort("127.0.0.1", 0),
              new dev.weir.core.config.HostPort("127.0.0.1", taken.getLocalPort()),
              1000,
              "info");

      assertThatThrownBy(() -> startAutoTls(config, Optional.of(caFile)))
          .isInstanceOf(java.net.BindException.class)
          .hasMessageContaining("gRPC")
          .hasMessageContaining(String.valueOf(taken.getLocalPort()));
    }

    assertThat(java.nio.file.Files.readString(caFile))
        .as("the CA file of the node holding the gRPC port")
        .isEqualTo(running);
  }

  @Test
  void tls_autoMutual_grpcWithPeerIdentityAndHttpsMetrics() throws Exception {
    TlsSettings tls =
        new TlsSettings(
            Optional.empty(), Optional.empty(), Optional.empty(), ClientAuth.REQUIRE_AND_VERIFY,
            "TLSv1.3", true, Duration.ofSeconds(10));
    node =
        WeirNode.builder(CONFIG)
            .ops(new OpsSettings(InputLimits.DEFAULTS, Duration.ZERO, Duration.ofSeconds(5), tls))
            .clock(clock)
            .store(new ClockBucketStore(clock, 1000))
            .start();
    TlsIdentity identity = node.tlsIdentity().orElseThrow();
    channel =
        Grpc.newChannelBuilderForAddress("localhost", node.grpcPort(), identity.peerCredentials())
            .build();
    ManagedChannel anonymous =
        Grpc.newChannelBuilderForAddress(
                "localhost",
                node.grpcPort(),
                TlsChannelCredentials.newBuilder()
                    .trustManager(
                        new java.io.ByteArrayInputStream(
                            Pem.encode(identity.chain()[identity.chain().length - 1])
                                .getBytes(java.nio.charset.StandardCharsets.US_ASCII)))
                    .build())
            .build();
    HttpClient https = HttpClient.newBuilder().sslContext(identity.sslContext()).build();

    assertThat(V1Grpc.newBlockingStub(channel).getRateLimits(request("k")).getResponses(0).getStatus())
        .isEqualTo(Status.UNDER_LIMIT);
    assertThatThrownBy(() -> V1Grpc.newBlockingStub(anonymous).getRateLimits(request("k")))
        .hasMessageStartingWith("UNAVAILABLE");
    anonymous.shutdownNow();
    HttpResponse<String> metrics =
        https.send(
            HttpRequest.newBuilder(URI.create("https://localhost:" + node.httpPort() + "/metrics")).build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(metrics.statusCode()).isEqualTo(200);
    assertThat(metrics.body()).contains("weir_checks_total");
  }
}
