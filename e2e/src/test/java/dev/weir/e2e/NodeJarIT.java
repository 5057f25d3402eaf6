package dev.weir.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.HealthCheckReq;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.Status;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Starts the real {@code weir.jar} as a process and talks to it over loopback. */
class NodeJarIT {

  /** The exit status of a JVM stopped by SIGTERM (128 + 15) after its shutdown hooks ran. */
  private static final int SIGTERM_EXIT = 143;

  private final HttpClient http = HttpClient.newHttpClient();

  @Test
  void jar_grpcAndHttp_limitEnforcedThenCleanShutdown() throws Exception {
    try (NodeProcess node = NodeProcess.start(Map.of())) {
      node.awaitHealthy(http);
      ManagedChannel channel =
          NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort).usePlaintext().build();
      try {
        V1Grpc.V1BlockingStub stub = V1Grpc.newBlockingStub(channel);
        GetRateLimitsReq req =
            GetRateLimitsReq.newBuilder()
                .addRequests(
                    RateLimitReq.newBuilder()
                        .setName("e2e")
                        .setUniqueKey("grpc")
                        .setHits(1)
                        .setLimit(2)
                        .setDuration(60_000))
                .build();

        assertThat(stub.getRateLimits(req).getResponses(0).getStatus())
            .isEqualTo(Status.UNDER_LIMIT);
        assertThat(stub.getRateLimits(req).getResponses(0).getStatus())
            .isEqualTo(Status.UNDER_LIMIT);
        assertThat(stub.getRateLimits(req).getResponses(0).getStatus())
            .isEqualTo(Status.OVER_LIMIT);
        assertThat(stub.healthCheck(HealthCheckReq.getDefaultInstance()).getAdvertiseAddress())
            .isEqualTo("127.0.0.1:" + node.grpcPort);
      } finally {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }

      String body =
          "{\"requests\":[{\"name\":\"e2e\",\"uniqueKey\":\"http\",\"hits\":\"1\",\"limit\":\"2\","
              + "\"duration\":\"60000\"}]}";
      assertThat(postGetRateLimits(node, body).body())
          .contains("\"status\":\"UNDER_LIMIT\"", "\"remaining\":\"1\"");
      assertThat(postGetRateLimits(node, body).body())
          .contains("\"status\":\"UNDER_LIMIT\"", "\"remaining\":\"0\"");
      HttpResponse<String> third = postGetRateLimits(node, body);
      assertThat(third.statusCode()).isEqualTo(200);
      assertThat(third.body()).contains("\"status\":\"OVER_LIMIT\"", "\"reset_time\":\"");

      assertThat(node.stdout())
          .contains(
              "Weir node started: version="
                  + System.getProperty("weir.version")
                  + " grpc_address=127.0.0.1:"
                  + node.grpcPort);

      int status = node.terminate(Duration.ofSeconds(30));

      assertThat(status).isEqualTo(SIGTERM_EXIT);
      assertThat(node.stdout()).contains("Weir node stopping", "Weir node stopped");
      assertThat(node.stderr()).doesNotContain("Exception");
    }
  }

  @Test
  void jar_badCacheSize_exitsNonZeroWithOneLine() throws Exception {
    try (NodeProcess node = NodeProcess.start(Map.of("WEIR_CACHE_SIZE", "abc"))) {
      int status = node.awaitExit(Duration.ofSeconds(30));

      assertThat(status).isEqualTo(2);
      assertThat(node.stderr())
          .isEqualTo(
              "WEIR_CACHE_SIZE='abc' is not valid: expected a whole number from 1 to 2147483647"
                  + System.lineSeparator());
    }
  }

  private HttpResponse<String> postGetRateLimits(NodeProcess node, String body) throws Exception {
    return http.send(
        HttpRequest.newBuilder(node.httpUri("/v1/GetRateLimits"))
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
