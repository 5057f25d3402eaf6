package dev.weir.e2e;

import static dev.weir.core.testkit.OtlpReceiver.hex;
import static dev.weir.core.testkit.OtlpReceiver.labels;
import static dev.weir.core.testkit.OtlpReceiver.only;
import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.OtlpReceiver;
import dev.weir.core.testkit.Traceparent;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.opentelemetry.proto.trace.v1.Span;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Tracing from the real {@code weir.jar}: two members export over OTLP/gRPC (the shaded jar's SDK,
 * exporter and their service files) to a receiver on loopback; a call carrying a {@code
 * traceparent}, forwarded to the other member, gives one trace across both processes, over gRPC and
 * over the HTTP/JSON gateway.
 */
class TracingJarIT {

  private static final String CALLER_SPAN_ID = "00f067aa0ba902b7";

  private final List<AutoCloseable> resources = new ArrayList<>();

  @AfterEach
  void stop() throws Exception {
    for (int i = resources.size() - 1; i >= 0; i--) {
      resources.get(i).close();
    }
  }

  @Test
  void forwardedCall_oneTraceAcrossBothProcesses() throws Exception {
    OtlpReceiver receiver = new OtlpReceiver();
    resources.add(receiver);
    int[] grpc = {NodeProcess.freePort(), NodeProcess.freePort()};
    int[] peerPorts = {NodeProcess.freePort(), NodeProcess.freePort()};
    String peers = NodeProcess.staticPeers(grpc, peerPorts);
    HttpClient http = HttpClient.newHttpClient();
    List<NodeProcess> nodes = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      NodeProcess node =
          NodeProcess.startMember(
              grpc[i],
              NodeProcess.freePort(),
              peerPorts[i],
              Map.of(
                  "WEIR_STATIC_PEERS", peers,
                  "OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint(),
                  "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc",
                  "OTEL_SERVICE_NAME", "weir-" + i,
                  "OTEL_BSP_SCHEDULE_DELAY", "100"));
      resources.add(node);
      nodes.add(node);
    }
    for (NodeProcess node : nodes) {
      node.awaitHealthy(http);
    }

    String traceId = null;
    for (int i = 0; i < 64 && traceId == null; i++) {
      String candidate = String.format("%032x", 0xfeed0000L + i);
      RateLimitResp answer =
          V1Grpc.newBlockingStub(channel(grpc[0], candidate))
              .withDeadlineAfter(10, TimeUnit.SECONDS)
              .getRateLimits(
                  GetRateLimitsReq.newBuilder()
                      .addRequests(
                          RateLimitReq.newBuilder()
                              .setName("e2e_tracing")
                              .setUniqueKey("key-" + i)
                              .setHits(1)
                              .setLimit(10)
                              .setDuration(60_000))
                      .build())
              .getResponses(0);
      assertThat(answer.getError()).isEmpty();
      if (answer.getMetadataMap().containsKey("owner")) {
        traceId = candidate;
      }
    }
    assertThat(traceId).as("a key the other member owns among 64").isNotNull();

    String forwarded = traceId;
    Await.holdsWithin(Duration.ofSeconds(20), () -> receiver.trace(forwarded).size() >= 4);
    List<OtlpReceiver.Received> trace = receiver.trace(forwarded);
    assertThat(labels(trace))
        .containsExactlyInAnyOrder(
            "weir-0:pb.gubernator.V1/GetRateLimits",
            "weir-0:weir.forward",
            "weir-0:weir.forward_batch",
            "weir-1:weir.decide");
    Span front = only(trace, "pb.gubernator.V1/GetRateLimits").span();
    Span forward = only(trace, "weir.forward").span();
    assertThat(hex(front.getParentSpanId())).isEqualTo(CALLER_SPAN_ID);
    assertThat(forward.getParentSpanId()).isEqualTo(front.getSpanId());
    assertThat(only(trace, "weir.decide").span().getParentSpanId()).isEqualTo(forward.getSpanId());

    String httpTraceId = null;
    for (int i = 0; i < 64 && httpTraceId == null; i++) {
      String candidate = String.format("%032x", 0xbeef0000L + i);
      HttpResponse<String> answer =
          http.send(
              HttpRequest.newBuilder(
                      URI.create(
                          "http://127.0.0.1:" + nodes.get(0).httpPort() + "/v1/GetRateLimits"))
                  .timeout(Duration.ofSeconds(10))
                  .header("traceparent", Traceparent.header(candidate, CALLER_SPAN_ID))
                  .POST(
                      HttpRequest.BodyPublishers.ofString(
                          "{\"requests\":[{\"name\":\"e2e_tracing_http\",\"unique_key\":"
                              + "\"key-"
                              + i
                              + "\",\"hits\":1,\"limit\":10,\"duration\":60000}]}"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(answer.statusCode()).isEqualTo(200);
      if (answer.body().contains("\"owner\"")) {
        httpTraceId = candidate;
      }
    }
    assertThat(httpTraceId).as("an HTTP key the other member owns among 64").isNotNull();

    String overHttp = httpTraceId;
    Await.holdsWithin(Duration.ofSeconds(20), () -> receiver.trace(overHttp).size() >= 4);
    List<OtlpReceiver.Received> httpTrace = receiver.trace(overHttp);
    assertThat(labels(httpTrace))
        .containsExactlyInAnyOrder(
            "weir-0:POST /v1/GetRateLimits",
            "weir-0:weir.forward",
            "weir-0:weir.forward_batch",
            "weir-1:weir.decide");
    Span httpFront = only(httpTrace, "POST /v1/GetRateLimits").span();
    Span httpForward = only(httpTrace, "weir.forward").span();
    assertThat(hex(httpFront.getParentSpanId())).isEqualTo(CALLER_SPAN_ID);
    assertThat(httpForward.getParentSpanId()).isEqualTo(httpFront.getSpanId());
    assertThat(only(httpTrace, "weir.decide").span().getParentSpanId())
        .isEqualTo(httpForward.getSpanId());
  }

  private ManagedChannel channel(int port, String traceId) {
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", port)
            .usePlaintext()
            .intercept(Traceparent.interceptor(traceId, CALLER_SPAN_ID))
            .build();
    resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    return channel;
  }
}
