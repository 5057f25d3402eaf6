package dev.weir.e2e.image;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.weir.e2e.DockerEngine;
import dev.weir.e2e.envoy.RepoFiles;
import dev.weir.proto.gubernator.HealthCheckReq;
import dev.weir.proto.gubernator.HealthCheckResp;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.testcontainers.containers.Container.ExecResult;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.images.builder.ImageFromDockerfile;

/**
 * The image the repository's {@code Dockerfile} builds from this checkout (build context filtered
 * by {@code .dockerignore}, {@code weir.jar} built inside) runs a node that answers through the
 * ports Docker maps: {@code GET /v1/HealthCheck} on the HTTP port and the gRPC {@code HealthCheck}
 * on the gRPC port, with no settings given, as UID 10001.
 *
 * <p>Needs a Docker engine: without one every test is reported skipped and the reason is printed.
 * The image build runs the Maven build, which takes minutes the first time.
 */
class ImageContainerIT {
  private static final int HTTP_PORT = 1050;
  private static final int GRPC_PORT = 1051;

  private static GenericContainer<?> weir;
  private static String dockerUnavailable;

  @BeforeAll
  static void start() {
    dockerUnavailable = DockerEngine.unavailableReason();
    if (dockerUnavailable != null) {
      System.out.println(
          "ImageContainerIT: every test is SKIPPED, Docker is not available: " + dockerUnavailable);
      return;
    }
    weir =
        new GenericContainer<>(
                new ImageFromDockerfile().withDockerfile(RepoFiles.root().resolve("Dockerfile")))
            .withExposedPorts(HTTP_PORT, GRPC_PORT)
            .withLogConsumer(frame -> System.out.print("[weir] " + frame.getUtf8String()))
            .waitingFor(Wait.forHttp("/v1/HealthCheck").forPort(HTTP_PORT).forStatusCode(200))
            .withStartupTimeout(Duration.ofMinutes(2));
    weir.start();
  }

  @BeforeEach
  void requireDocker() {
    assumeTrue(dockerUnavailable == null, () -> "Docker is not available: " + dockerUnavailable);
  }

  @AfterAll
  static void stop() {
    if (weir != null) {
      weir.stop();
    }
  }

  @Test
  void httpHealthCheck_throughTheMappedPort_isHealthyWithOnePeer() throws Exception {
    URI uri =
        URI.create(
            "http://" + weir.getHost() + ":" + weir.getMappedPort(HTTP_PORT) + "/v1/HealthCheck");
    HttpResponse<String> response =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());

    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    assertThat(response.body()).contains("\"status\":\"healthy\"", "\"peer_count\":1");
  }

  @Test
  void grpcHealthCheck_throughTheMappedPort_isHealthy() throws Exception {
    ManagedChannel channel =
        NettyChannelBuilder.forAddress(weir.getHost(), weir.getMappedPort(GRPC_PORT))
            .usePlaintext()
            .build();
    try {
      HealthCheckResp health =
          V1Grpc.newBlockingStub(channel)
              .withDeadlineAfter(10, TimeUnit.SECONDS)
              .healthCheck(HealthCheckReq.getDefaultInstance());

      assertThat(health.getStatus()).isEqualTo("healthy");
      assertThat(health.getPeerCount()).isEqualTo(1);
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void node_runsAsTheImagesNonRootUser() throws Exception {
    ExecResult id = weir.execInContainer("id", "-u");

    assertThat(id.getStdout().strip()).isEqualTo("10001");
  }
}
