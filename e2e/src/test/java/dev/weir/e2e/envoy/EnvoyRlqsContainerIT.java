package dev.weir.e2e.envoy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.net.httpserver.HttpServer;
import dev.weir.e2e.DockerEngine;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.testcontainers.Testcontainers;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.utility.DockerImageName;
import org.testcontainers.utility.MountableFile;

/**
 * The shipped RLQS bootstrap ({@code envoy-config/rlqs/envoy.yaml}) in a real Envoy ({@link
 * EnvoyImage#NAME}) in front of a real Weir: the rate-limit quota filter opens a stream to Weir,
 * reports its buckets and enforces the token bucket Weir assigns, so requests beyond the anonymous
 * bucket's share get the filter's own 429 with the configured body, and Weir's metrics show the
 * reports and assignments.
 *
 * <p>Weir ({@code weir.jar}) and an echo upstream run on this host and are exposed to the container
 * with {@link Testcontainers#exposeHostPorts}; the bootstrap is adapted only in its upstream
 * addresses ({@link ContainerBootstrap#adaptUpstreams}). Needs a Docker engine: without one every
 * test is reported skipped and the reason is printed.
 */
class EnvoyRlqsContainerIT {
  private static final int LISTENER_PORT = 10100;
  private static final int ADMIN_PORT = 9902;
  private static final String HOST_FROM_CONTAINER = "host.testcontainers.internal";
  private static final String DOMAIN = "weir-rlqs-demo";

  private static HttpServer echo;
  private static WeirCluster weir;
  private static GenericContainer<?> envoy;
  private static String dockerUnavailable;
  private static final HttpClient HTTP =
      HttpClient.newBuilder()
          .connectTimeout(Duration.ofSeconds(5))
          .version(HttpClient.Version.HTTP_1_1)
          .build();

  @BeforeAll
  static void start() throws IOException {
    dockerUnavailable = DockerEngine.unavailableReason();
    if (dockerUnavailable != null) {
      System.out.println(
          "EnvoyRlqsContainerIT: every test is SKIPPED, Docker is not available: "
              + dockerUnavailable);
      return;
    }
    echo = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    echo.createContext(
        "/",
        exchange -> {
          byte[] body = ("echo " + exchange.getRequestURI()).getBytes(StandardCharsets.UTF_8);
          exchange.sendResponseHeaders(200, body.length);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
          }
        });
    echo.start();

    Path logDir = Path.of("target", "envoy-rlqs-container-it");
    weir = WeirCluster.start(1, RepoFiles.rlqsDescriptors(), Map.of(), logDir);
    weir.awaitReady(
        RateLimitRequest.newBuilder()
            .setDomain(DOMAIN)
            .addDescriptors(
                RateLimitDescriptor.newBuilder()
                    .addEntries(
                        RateLimitDescriptor.Entry.newBuilder().setKey("name").setValue("probe")))
            .build());
    int weirPort = weir.nodes().get(0).grpcPort();
    int echoPort = echo.getAddress().getPort();
    Testcontainers.exposeHostPorts(weirPort, echoPort);

    Path config = logDir.resolve("envoy-rlqs.json");
    Files.writeString(
        config,
        EnvoyYaml.toJson(
            ContainerBootstrap.adaptUpstreams(
                EnvoyYaml.load(RepoFiles.rlqsBootstrap()),
                HOST_FROM_CONTAINER,
                Map.of("weir_rlqs", weirPort, ContainerBootstrap.ECHO_CLUSTER, echoPort))));
    envoy =
        new GenericContainer<>(DockerImageName.parse(EnvoyImage.NAME))
            .withCopyFileToContainer(
                MountableFile.forHostPath(config, 0644), "/etc/envoy/envoy.json")
            .withCommand("envoy", "-c", "/etc/envoy/envoy.json", "--log-level", "warn")
            .withExposedPorts(LISTENER_PORT, ADMIN_PORT)
            .withLogConsumer(frame -> System.out.print("[envoy] " + frame.getUtf8String()))
            .waitingFor(Wait.forHttp("/ready").forPort(ADMIN_PORT).forStatusCode(200))
            .withStartupTimeout(Duration.ofMinutes(3));
    envoy.start();
  }

  @BeforeEach
  void requireDocker() {
    assumeTrue(dockerUnavailable == null, () -> "Docker is not available: " + dockerUnavailable);
  }

  @AfterAll
  static void stop() {
    if (envoy != null) {
      envoy.stop();
    }
    if (weir != null) {
      weir.close();
    }
    if (echo != null) {
      echo.stop(0);
    }
  }

  @Test
  void anonymousBucket_beyondItsShare_isDeniedByTheProxyWithTheConfiguredBody() throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    int allowed = 0;
    HttpResponse<String> denied = null;
    while (denied == null && System.nanoTime() < deadline) {
      HttpResponse<String> response = get("/anything");
      if (response.statusCode() == 200) {
        assertThat(response.body()).isEqualTo("echo /anything");
        allowed++;
      } else {
        denied = response;
      }
    }

    assertThat(denied).as("a request beyond the bucket's share").isNotNull();
    assertThat(denied.statusCode()).isEqualTo(429);
    assertThat(denied.body()).isEqualTo("quota exceeded\n");
    assertThat(allowed).as("requests allowed before the first denial").isBetween(1, 60);

    String metrics = weirMetrics();
    assertThat(metrics).contains("weir_rlqs_usage_reports_total");
    assertThat(metrics)
        .containsPattern("weir_rlqs_assignments_total\\{action=\"token_bucket\"} [1-9]");
    assertThat(metrics).containsPattern("weir_rlqs_streams [1-9]");
  }

  private static HttpResponse<String> get(String path) throws Exception {
    return HTTP.send(
        HttpRequest.newBuilder(
                URI.create(
                    "http://" + envoy.getHost() + ":" + envoy.getMappedPort(LISTENER_PORT) + path))
            .timeout(Duration.ofSeconds(10))
            .GET()
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static String weirMetrics() throws Exception {
    return HTTP.send(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + weir.nodes().get(0).httpPort() + "/metrics"))
                .GET()
                .build(),
            HttpResponse.BodyHandlers.ofString())
        .body();
  }
}
