package dev.weir.e2e.envoy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.net.httpserver.HttpServer;
import dev.weir.e2e.DockerEngine;
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
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer.OrderAnnotation;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.testcontainers.Testcontainers;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.utility.DockerImageName;
import org.testcontainers.utility.MountableFile;

/**
 * The shipped front proxy in a real Envoy ({@link EnvoyImage#NAME}) in front of a real Weir: HTTP
 * requests through Envoy get 200 until a limit is reached, then 429 with {@code
 * x-envoy-ratelimited} and {@code x-ratelimit-*}; with Weir stopped, the fail-open listener
 * (:10000) lets requests through and the fail-closed one (:10001) answers 500.
 *
 * <p>Weir (from {@code weir.jar}) and a small echo upstream run on this host and are exposed to the
 * container with {@link Testcontainers#exposeHostPorts}; Envoy runs {@code
 * envoy-config/front-proxy/envoy.yaml} adapted only in its upstream addresses and rate-limit
 * timeout ({@link ContainerBootstrap}). Needs a Docker engine: without one every test is reported
 * skipped and the reason is printed.
 */
@TestMethodOrder(OrderAnnotation.class)
class EnvoyContainerIT {
  private static final int FAIL_OPEN_PORT = 10000;
  private static final int FAIL_CLOSED_PORT = 10001;
  private static final int ADMIN_PORT = 9901;
  private static final String HOST_FROM_CONTAINER = "host.testcontainers.internal";
  private static final String API_KEY_POLICY =
      "5, 5;w=60;name=\"per-api-key\", 60;w=60;name=\"per-client\"";

  private static HttpServer echo;
  private static WeirCluster weir;
  private static GenericContainer<?> envoy;
  private static final HttpClient HTTP =
      HttpClient.newBuilder()
          .connectTimeout(Duration.ofSeconds(5))
          .version(HttpClient.Version.HTTP_1_1)
          .build();

  private static String dockerUnavailable;

  @BeforeAll
  static void start() throws IOException {
    dockerUnavailable = DockerEngine.unavailableReason();
    if (dockerUnavailable != null) {
      System.out.println(
          "EnvoyContainerIT: every test is SKIPPED, Docker is not available: " + dockerUnavailable);
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

    Path logDir = Path.of("target", "envoy-container-it");
    weir =
        WeirCluster.start(
            1,
            RepoFiles.frontProxyDescriptors(),
            Map.of("WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_ENABLED", "true"),
            logDir);
    weir.awaitReady(EnvoyFlowIT.call(EnvoyFlowIT.d("remote_address", "probe")));
    int weirPort = weir.nodes().get(0).grpcPort();
    int echoPort = echo.getAddress().getPort();
    Testcontainers.exposeHostPorts(weirPort, echoPort);

    Path config = logDir.resolve("envoy.json");
    Files.writeString(
        config,
        EnvoyYaml.toJson(
            ContainerBootstrap.adapt(
                EnvoyYaml.load(RepoFiles.frontProxyBootstrap()),
                HOST_FROM_CONTAINER,
                weirPort,
                echoPort)));
    envoy =
        new GenericContainer<>(DockerImageName.parse(EnvoyImage.NAME))
            .withCopyFileToContainer(
                MountableFile.forHostPath(config, 0644), "/etc/envoy/envoy.json")
            .withCommand("envoy", "-c", "/etc/envoy/envoy.json", "--log-level", "warn")
            .withExposedPorts(FAIL_OPEN_PORT, FAIL_CLOSED_PORT, ADMIN_PORT)
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
  @Order(1)
  void apiRoute_sixthRequestOfAKeyInAMinute_is429WithRateLimitHeaders() throws Exception {
    FixedWindows.awaitMarginInCurrentMinute();
    String key = "k-" + UUID.randomUUID();
    for (int i = 1; i <= 5; i++) {
      HttpResponse<String> response = get(FAIL_OPEN_PORT, "/api/orders", "x-api-key", key);
      assertThat(response.statusCode()).as("request %d", i).isEqualTo(200);
      assertThat(response.body()).isEqualTo("echo /api/orders");
      assertThat(header(response, "x-ratelimit-limit")).isEqualTo(API_KEY_POLICY);
      assertThat(header(response, "x-ratelimit-remaining")).isEqualTo(Integer.toString(5 - i));
      assertThat(Long.parseLong(header(response, "x-ratelimit-reset"))).isBetween(1L, 60L);
      assertThat(header(response, "ratelimit-remaining")).isEqualTo(Integer.toString(5 - i));
      assertThat(response.headers().firstValue("x-envoy-ratelimited")).isEmpty();
    }

    HttpResponse<String> limited = get(FAIL_OPEN_PORT, "/api/orders", "x-api-key", key);
    assertThat(limited.statusCode()).isEqualTo(429);
    assertThat(header(limited, "x-envoy-ratelimited")).isEqualTo("true");
    assertThat(header(limited, "x-ratelimit-limit")).isEqualTo(API_KEY_POLICY);
    assertThat(header(limited, "x-ratelimit-remaining")).isEqualTo("0");
    assertThat(Long.parseLong(header(limited, "x-ratelimit-reset"))).isBetween(1L, 60L);
    assertThat(header(limited, "ratelimit-limit")).isEqualTo("5");

    HttpResponse<String> otherListener = get(FAIL_CLOSED_PORT, "/api/orders", "x-api-key", key);
    assertThat(otherListener.statusCode())
        .as("same counters behind the fail_closed listener")
        .isEqualTo(429);
  }

  @Test
  @Order(2)
  void searchRoute_eachSearchCostsFiveOfTwenty_fifthSearchIs429() throws Exception {
    FixedWindows.awaitMarginInCurrentMinute();
    for (int i = 1; i <= 4; i++) {
      HttpResponse<String> response = get(FAIL_OPEN_PORT, "/search?q=weir");
      assertThat(response.statusCode()).as("search %d", i).isEqualTo(200);
      assertThat(header(response, "x-ratelimit-remaining")).isEqualTo(Integer.toString(20 - 5 * i));
    }
    HttpResponse<String> limited = get(FAIL_OPEN_PORT, "/search?q=weir");
    assertThat(limited.statusCode()).isEqualTo(429);
    assertThat(header(limited, "x-envoy-ratelimited")).isEqualTo("true");
    assertThat(header(limited, "x-ratelimit-limit"))
        .isEqualTo("20, 20;w=60;name=\"search-budget\"");
  }

  @Test
  @Order(3)
  void trialRoute_limitOverrideFromMetadata_thirdRequestIs429() throws Exception {
    FixedWindows.awaitMarginInCurrentMinute();
    String key = "trial-" + UUID.randomUUID();
    for (int i = 1; i <= 2; i++) {
      HttpResponse<String> response = get(FAIL_OPEN_PORT, "/trial/start", "x-api-key", key);
      assertThat(response.statusCode()).as("trial request %d", i).isEqualTo(200);
      assertThat(header(response, "x-ratelimit-limit")).isEqualTo("2, 2;w=60");
    }
    HttpResponse<String> limited = get(FAIL_OPEN_PORT, "/trial/start", "x-api-key", key);
    assertThat(limited.statusCode()).isEqualTo(429);
    assertThat(header(limited, "x-envoy-ratelimited")).isEqualTo("true");
  }

  @Test
  @Order(4)
  void defaultRoute_noRateLimits_passesWithoutRateLimitHeaders() throws Exception {
    HttpResponse<String> response = get(FAIL_OPEN_PORT, "/health");
    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.headers().firstValue("x-ratelimit-limit")).isEmpty();
  }

  @Test
  @Order(5)
  void weirStopped_failOpenListenerAllows_failClosedListenerAnswers500() throws Exception {
    weir.close();
    String key = "k-" + UUID.randomUUID();

    HttpResponse<String> open = get(FAIL_OPEN_PORT, "/api/orders", "x-api-key", key);
    assertThat(open.statusCode()).as("failure_mode_deny: false").isEqualTo(200);
    assertThat(open.body()).isEqualTo("echo /api/orders");
    assertThat(open.headers().firstValue("x-envoy-ratelimited")).isEmpty();

    HttpResponse<String> closed = get(FAIL_CLOSED_PORT, "/api/orders", "x-api-key", key);
    assertThat(closed.statusCode()).as("failure_mode_deny: true").isEqualTo(500);
    assertThat(closed.headers().firstValue("x-envoy-ratelimited")).isEmpty();
  }

  private static HttpResponse<String> get(int port, String path, String... headers)
      throws Exception {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(
                URI.create("http://" + envoy.getHost() + ":" + envoy.getMappedPort(port) + path))
            .timeout(Duration.ofSeconds(10))
            .GET();
    for (int i = 0; i < headers.length; i += 2) {
      request.header(headers[i], headers[i + 1]);
    }
    return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static String header(HttpResponse<?> response, String name) {
    return response
        .headers()
        .firstValue(name)
        .orElseThrow(
            () ->
                new AssertionError(
                    "no "
                        + name
                        + " header in "
                        + response.statusCode()
                        + " "
                        + response.headers().map()));
  }
}
