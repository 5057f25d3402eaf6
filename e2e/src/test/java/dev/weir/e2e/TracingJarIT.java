package dev.weir.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
import io.opentelemetry.proto.collector.trace.v1.TraceServiceGrpc;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import io.opentelemetry.proto.trace.v1.Span;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Tracing from the real {@code weir.jar}: two members export over OTLP/gRPC (the shaded jar's SDK,
 * exporter and their service files) to a receiver on loopback; a call carrying a {@code
 * traceparent}, forwarded to the other member, gives one trace across both processes, over gRPC
 * and over the HTTP/JSON gateway.
 */
class TracingJarIT {

  private final List<Span> received = new CopyOnWriteArrayList<>();
  private final Map<Span, String> services = new ConcurrentHashMap<>();
  private final List<AutoCloseable> resources = new ArrayList<>();

  @AfterEach
  void stop() throws Exception {
    for (int i = resources.size() - 1; i >= 0; i--) {
      resources.get(i).close();
    }
  }

  @Test
  void forwardedCall_oneTraceAcrossBothProcesses() throws Exception {
    Server receiver = receiver();
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
                  "OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:" + receiver.getPort(),
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
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (names(forwarded).size() < 4 && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertThat(names(forwarded))
        .containsExactlyInAnyOrder(
            "weir-0:pb.gubernator.V1/GetRateLimits",
            "weir-0:weir.forward",
            "weir-0:weir.forward_batch",
            "weir-1:weir.decide");
    Span front = span(forwarded, "pb.gubernator.V1/GetRateLimits");
    Span forward = span(forwarded, "weir.forward");
    assertThat(hex(front.getParentSpanId().toByteArray())).isEqualTo("00f067aa0ba902b7");
    assertThat(forward.getParentSpanId()).isEqualTo(front.getSpanId());
    assertThat(span(forwarded, "weir.decide").getParentSpanId()).isEqualTo(forward.getSpanId());

    String httpTraceId = null;
    for (int i = 0; i < 64 && httpTraceId == null; i++) {
      String candidate = String.format("%032x", 0xbeef0000L + i);
      HttpResponse<String> answer =
          http.send(
              HttpRequest.newBuilder(
                      URI.create(
                          "http://127.0.0.1:" + nodes.get(0).httpPort() + "/v1/GetRateLimits"))
                  .timeout(Duration.ofSeconds(10))
                  .header("traceparent", "00-" + candidate + "-00f067aa0ba902b7-01")
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
    deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (names(overHttp).size() < 4 && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertThat(names(overHttp))
        .containsExactlyInAnyOrder(
            "weir-0:POST /v1/GetRateLimits",
            "weir-0:weir.forward",
            "weir-0:weir.forward_batch",
            "weir-1:weir.decide");
    Span httpFront = span(overHttp, "POST /v1/GetRateLimits");
    Span httpForward = span(overHttp, "weir.forward");
    assertThat(hex(httpFront.getParentSpanId().toByteArray())).isEqualTo("00f067aa0ba902b7");
    assertThat(httpForward.getParentSpanId()).isEqualTo(httpFront.getSpanId());
    assertThat(span(overHttp, "weir.decide").getParentSpanId())
        .isEqualTo(httpForward.getSpanId());
  }

  private List<String> names(String traceId) {
    return received.stream()
        .filter(s -> hex(s.getTraceId().toByteArray()).equals(traceId))
        .map(s -> services.get(s) + ":" + s.getName())
        .toList();
  }

  private Span span(String traceId, String name) {
    return received.stream()
        .filter(s -> hex(s.getTraceId().toByteArray()).equals(traceId))
        .filter(s -> s.getName().equals(name))
        .findFirst()
        .orElseThrow();
  }

  private ManagedChannel channel(int port, String traceId) {
    Metadata headers = new Metadata();
    headers.put(
        Metadata.Key.of("traceparent", Metadata.ASCII_STRING_MARSHALLER),
        "00-" + traceId + "-00f067aa0ba902b7-01");
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", port)
            .usePlaintext()
            .intercept(MetadataUtils.newAttachHeadersInterceptor(headers))
            .build();
    resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    return channel;
  }

  /** Starts an OTLP/gRPC trace receiver on loopback: opentelemetry-proto's {@code TraceService}. */
  private Server receiver() throws Exception {
    Server server =
        NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
            .addService(
                new TraceServiceGrpc.TraceServiceImplBase() {
                  @Override
                  public void export(
                      ExportTraceServiceRequest request,
                      StreamObserver<ExportTraceServiceResponse> answer) {
                    for (ResourceSpans resource : request.getResourceSpansList()) {
                      String service =
                          resource.getResource().getAttributesList().stream()
                              .filter(kv -> kv.getKey().equals("service.name"))
                              .map(kv -> kv.getValue().getStringValue())
                              .findFirst()
                              .orElse("");
                      for (ScopeSpans scope : resource.getScopeSpansList()) {
                        for (Span span : scope.getSpansList()) {
                          services.put(span, service);
                          received.add(span);
                        }
                      }
                    }
                    answer.onNext(ExportTraceServiceResponse.getDefaultInstance());
                    answer.onCompleted();
                  }
                })
            .build()
            .start();
    resources.add(() -> server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    return server;
  }

  private static String hex(byte[] bytes) {
    return HexFormat.of().formatHex(bytes);
  }
}
