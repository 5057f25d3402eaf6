package dev.weir.server;

import static dev.weir.core.testkit.OtlpReceiver.hex;
import static dev.weir.core.testkit.OtlpReceiver.only;
import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.peer.auth.PeerSecret;
import dev.weir.core.cluster.peer.auth.PeerSettings;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FreePorts;
import dev.weir.core.testkit.OtlpReceiver;
import dev.weir.core.testkit.RawGrpc;
import dev.weir.core.testkit.RingKeys;
import dev.weir.core.testkit.Traceparent;
import dev.weir.envoy.EnvoySettings;
import dev.weir.proto.gubernator.Behavior;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.HealthCheckReq;
import dev.weir.proto.gubernator.LiveCheckReq;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.V1Grpc;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.MetadataUtils;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.trace.v1.Span;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.StringJoiner;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tracing end to end: two real nodes export over OTLP/gRPC to a real receiver on loopback ({@link
 * OtlpReceiver}); a call carrying a W3C {@code traceparent} to one node, for a key the other owns,
 * gives one trace whose spans chain across both nodes. Node A reads the reference's {@code
 * TRACING_*} variables (the compatibility mode), node B the standard {@code OTEL_*} ones (Weir
 * mode), so both paths to the SDK export.
 */
class TracingTest {

  private static final String YAML =
      """
      domain: edge
      descriptors:
        - key: remote_address
          rate_limit:
            unit: hour
            requests_per_unit: 100
        - key: api_key
          rate_limit: {unit: minute, requests_per_unit: 50, name: per-api-key}
      """;

  private static final String SECRET_KEY_PREFIX = "secret-customer-";

  @TempDir Path dir;

  private final List<AutoCloseable> resources = new ArrayList<>();
  private OtlpReceiver receiver;

  @BeforeEach
  void startReceiver() throws Exception {
    receiver = new OtlpReceiver();
    resources.add(receiver);
    Files.writeString(dir.resolve("edge.yaml"), YAML);
  }

  @AfterEach
  void stop() throws Exception {
    for (int i = resources.size() - 1; i >= 0; i--) {
      resources.get(i).close();
    }
  }

  @Test
  void forwardedGetRateLimits_oneTraceChainsFromTheCallerAcrossBothNodes() throws Exception {
    WeirNode[] nodes = twoTracedNodes();
    WeirNode a = nodes[0];
    WeirNode b = nodes[1];
    String key = keyOwnedBy(b, a);
    String traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    String callerSpanId = "00f067aa0ba902b7";

    GetRateLimitsResp answer =
        V1Grpc.newBlockingStub(channel(a, traceId, callerSpanId))
            .withDeadlineAfter(10, TimeUnit.SECONDS)
            .getRateLimits(GetRateLimitsReq.newBuilder().addRequests(tracingItem(key)).build());
    assertThat(answer.getResponses(0).getError()).isEmpty();
    assertThat(answer.getResponses(0).getMetadataMap())
        .containsEntry("owner", b.advertiseAddress().toString());

    List<OtlpReceiver.Received> trace = awaitTrace(nodes, traceId, 4);
    OtlpReceiver.Received front = only(trace, "pb.gubernator.V1/GetRateLimits");
    OtlpReceiver.Received forward = only(trace, "weir.forward");
    OtlpReceiver.Received batch = only(trace, "weir.forward_batch");
    OtlpReceiver.Received decide = only(trace, "weir.decide");
    assertThat(front.service()).isEqualTo("edge-limits");
    assertThat(front.instance()).isEqualTo("node a");
    assertThat(forward.service()).isEqualTo("edge-limits");
    assertThat(batch.service()).isEqualTo("edge-limits");
    assertThat(decide.service()).isEqualTo("weir-b");
    assertThat(hex(front.span().getParentSpanId())).isEqualTo(callerSpanId);
    assertThat(forward.span().getParentSpanId()).isEqualTo(front.span().getSpanId());
    assertThat(batch.span().getParentSpanId()).isEqualTo(forward.span().getSpanId());
    assertThat(batch.span().getLinksList())
        .anySatisfy(link -> assertThat(link.getSpanId()).isEqualTo(forward.span().getSpanId()));
    assertThat(decide.span().getParentSpanId()).isEqualTo(forward.span().getSpanId());
    assertThat(attributes(front.span())).containsEntry("weir.outcome", "UNDER_LIMIT");
    assertThat(attributes(forward.span()))
        .containsEntry("weir.peer", b.advertiseAddress().toString())
        .containsEntry("weir.names", "[tracing]")
        .containsEntry("weir.outcome", "UNDER_LIMIT");
    assertThat(attributes(decide.span()))
        .containsEntry("weir.name", "tracing")
        .containsEntry("weir.outcome", "UNDER_LIMIT")
        .containsEntry("weir.remaining", "9");
    assertNoSecretIn(trace);
  }

  @Test
  void shouldRateLimit_theForwardedCallsTracesNameTheDomainAndNoDescriptorValue() throws Exception {
    WeirNode[] nodes = twoTracedNodes();
    List<String> traceIds = twentyClientsUntilNodeBDecides(nodes, 0xabc000L);

    for (String traceId : traceIds) {
      List<OtlpReceiver.Received> trace = receiver.trace(traceId);
      OtlpReceiver.Received front =
          only(trace, "envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit");
      assertThat(attributes(front.span()))
          .containsEntry("weir.domain", "edge")
          .containsEntry("weir.outcome", "OK");
      trace.stream()
          .filter(s -> s.span().getName().equals("weir.decide"))
          .forEach(
              decide ->
                  assertThat(decide.span().getParentSpanId())
                      .isEqualTo(only(trace, "weir.forward").span().getSpanId()));
      assertNoSecretIn(trace);
    }
  }

  @Test
  void shouldRateLimit_stoppingIncrementsWhenOver_bothForwardsTracedAndTheHitsDecidedOnTheOwner()
      throws Exception {
    WeirNode[] nodes =
        twoTracedNodes(
            ClusterSettings.defaults(),
            EnvoySettings.fromEnvironment(
                    Map.of("WEIR_ENVOY_STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "true"))
                .withConfig(dir));
    List<String> traceIds = twentyClientsUntilNodeBDecides(nodes, 0xdef000L);
    flush(nodes);
    int forwarded = 0;
    for (String traceId : traceIds) {
      List<OtlpReceiver.Received> trace = receiver.trace(traceId);
      List<OtlpReceiver.Received> forwards =
          trace.stream().filter(s -> s.span().getName().equals("weir.forward")).toList();
      if (forwards.isEmpty()) {
        continue;
      }
      forwarded++;
      OtlpReceiver.Received front =
          only(trace, "envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit");
      assertThat(forwards)
          .as("the probe's forward and the forward taking the hits")
          .hasSize(2)
          .allSatisfy(
              f -> assertThat(f.span().getParentSpanId()).isEqualTo(front.span().getSpanId()));
      List<OtlpReceiver.Received> decides =
          trace.stream().filter(s -> s.span().getName().equals("weir.decide")).toList();
      assertThat(decides)
          .as("the owner's decision of the hits")
          .anySatisfy(
              d -> {
                assertThat(d.service()).isEqualTo("weir-b");
                assertThat(attributes(d.span())).containsEntry("weir.hits", "1");
              });
      assertNoSecretIn(trace);
    }
    assertThat(forwarded).as("calls forwarded to node B").isPositive();
  }

  @Test
  void shouldRateLimit_configMatchSpanIsAChildOfTheCallNamingDomainRulesAndDescriptorCount()
      throws Exception {
    WeirNode[] nodes = twoTracedNodes();
    String traceId = "5bf92f3577b34da6a3ce929d0e0e4736";
    RateLimitResponse answer =
        shouldRateLimit(
            nodes[0],
            traceId,
            descriptor("remote_address", SECRET_KEY_PREFIX + "ip"),
            descriptor("api_key", SECRET_KEY_PREFIX + "key"),
            descriptor("unconfigured", SECRET_KEY_PREFIX + "other"));
    assertThat(answer.getOverallCode()).isEqualTo(RateLimitResponse.Code.OK);

    List<OtlpReceiver.Received> trace =
        awaitSpans(
            nodes,
            traceId,
            "envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit",
            "weir.config_match");
    OtlpReceiver.Received front =
        only(trace, "envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit");
    OtlpReceiver.Received match = only(trace, "weir.config_match");
    assertThat(match.service()).isEqualTo("edge-limits");
    assertThat(match.span().getParentSpanId()).isEqualTo(front.span().getSpanId());
    assertThat(attributes(match.span()))
        .containsEntry("weir.domain", "edge")
        .containsEntry("weir.descriptors", "3")
        .containsEntry("weir.rules", "[remote_address, per-api-key]");
    assertNoSecretIn(trace);
  }

  @Test
  void overTheLimit_frontDoorSpansNameTheRulesThatFiredAndTheNativeNames() throws Exception {
    WeirNode[] nodes = twoTracedNodes();
    String envoyTrace = "8bf92f3577b34da6a3ce929d0e0e4736";
    String jsonTrace = "9bf92f3577b34da6a3ce929d0e0e4736";
    String nativeTrace = "abf92f3577b34da6a3ce929d0e0e4736";
    String gatewayTrace = "bbf92f3577b34da6a3ce929d0e0e4736";

    RateLimitResponse envoy =
        RateLimitServiceGrpc.newBlockingStub(channel(nodes[0], envoyTrace, "00f067aa0ba902b7"))
            .withDeadlineAfter(10, TimeUnit.SECONDS)
            .shouldRateLimit(
                RateLimitRequest.newBuilder()
                    .setDomain("edge")
                    .setHitsAddend(101)
                    .addDescriptors(descriptor("remote_address", SECRET_KEY_PREFIX + "ip"))
                    .addDescriptors(descriptor("api_key", SECRET_KEY_PREFIX + "key"))
                    .build());
    HttpResponse<String> json =
        post(
            nodes[0],
            "/json",
            "{\"domain\":\"edge\",\"hitsAddend\":60,\"descriptors\":[{\"entries\":"
                + "[{\"key\":\"api_key\",\"value\":\""
                + SECRET_KEY_PREFIX
                + "json\"}]}]}",
            jsonTrace,
            "00f067aa0ba902b7");
    GetRateLimitsResp gubernator =
        V1Grpc.newBlockingStub(channel(nodes[0], nativeTrace, "00f067aa0ba902b7"))
            .withDeadlineAfter(10, TimeUnit.SECONDS)
            .getRateLimits(
                GetRateLimitsReq.newBuilder()
                    .addRequests(tracingItem(SECRET_KEY_PREFIX + "native").setHits(11))
                    .addRequests(tracingItem(SECRET_KEY_PREFIX + "native").setName("roomy"))
                    .build());
    HttpResponse<String> gateway =
        post(
            nodes[0],
            "/v1/GetRateLimits",
            "{\"requests\":[{\"name\":\"tracing\",\"unique_key\":\""
                + SECRET_KEY_PREFIX
                + "gateway\",\"hits\":11,\"limit\":10,\"duration\":60000}]}",
            gatewayTrace,
            "00f067aa0ba902b7");

    assertThat(envoy.getOverallCode()).isEqualTo(RateLimitResponse.Code.OVER_LIMIT);
    assertThat(json.body()).contains("OVER_LIMIT");
    assertThat(gubernator.getResponses(0).getStatus())
        .isEqualTo(dev.weir.proto.gubernator.Status.OVER_LIMIT);
    assertThat(gateway.body()).contains("OVER_LIMIT");
    String shouldRateLimit = "envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit";
    List<OtlpReceiver.Received> envoyTraced = awaitSpans(nodes, envoyTrace, shouldRateLimit);
    assertThat(attributes(only(envoyTraced, shouldRateLimit).span()))
        .containsEntry("weir.outcome", "OVER_LIMIT")
        .containsEntry("weir.over_limit_rules", "[remote_address, per-api-key]")
        .doesNotContainKey("weir.shadow_over_limit_rules");
    List<OtlpReceiver.Received> jsonTraced = awaitSpans(nodes, jsonTrace, "POST /json");
    assertThat(attributes(only(jsonTraced, "POST /json").span()))
        .containsEntry("weir.over_limit_rules", "[per-api-key]");
    List<OtlpReceiver.Received> nativeTraced =
        awaitSpans(nodes, nativeTrace, "pb.gubernator.V1/GetRateLimits");
    assertThat(attributes(only(nativeTraced, "pb.gubernator.V1/GetRateLimits").span()))
        .containsEntry("weir.over_limit_items", "1")
        .containsEntry("weir.over_limit_names", "[tracing]");
    List<OtlpReceiver.Received> gatewayTraced =
        awaitSpans(nodes, gatewayTrace, "POST /v1/GetRateLimits");
    assertThat(attributes(only(gatewayTraced, "POST /v1/GetRateLimits").span()))
        .containsEntry("weir.over_limit_names", "[tracing]");
    for (List<OtlpReceiver.Received> trace :
        List.of(envoyTraced, jsonTraced, nativeTraced, gatewayTraced)) {
      assertNoSecretIn(trace);
    }
  }

  @Test
  void clientChosenDomainAndNames_areCutToTheAttributeValueLengthLimit() throws Exception {
    WeirNode[] nodes = twoTracedNodes();
    String envoyTrace = "6bf92f3577b34da6a3ce929d0e0e4736";
    String nativeTrace = "7bf92f3577b34da6a3ce929d0e0e4736";
    String domain = "d".repeat(100_000);
    String name = "n".repeat(100_000);

    RateLimitServiceGrpc.newBlockingStub(channel(nodes[0], envoyTrace, "00f067aa0ba902b7"))
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .shouldRateLimit(
            RateLimitRequest.newBuilder()
                .setDomain(domain)
                .addDescriptors(descriptor("remote_address", "10.0.0.1"))
                .build());
    V1Grpc.newBlockingStub(channel(nodes[0], nativeTrace, "00f067aa0ba902b7"))
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .getRateLimits(
            GetRateLimitsReq.newBuilder().addRequests(tracingItem("k").setName(name)).build());

    int most = TracingSettings.SPAN_ATTRIBUTE_VALUE_LENGTH;
    OtlpReceiver.Received envoy =
        only(
            awaitSpans(
                nodes, envoyTrace, "envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"),
            "envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit");
    assertThat(attributes(envoy.span()).get("weir.domain")).isEqualTo(domain.substring(0, most));
    OtlpReceiver.Received gubernator =
        only(
            awaitSpans(nodes, nativeTrace, "pb.gubernator.V1/GetRateLimits"),
            "pb.gubernator.V1/GetRateLimits");
    assertThat(attributes(gubernator.span()).get("weir.names"))
        .isEqualTo("[" + name.substring(0, most) + "]");
  }

  @Test
  void httpGetRateLimits_withTraceparent_oneTraceChainsFromTheCallerAcrossBothNodes()
      throws Exception {
    WeirNode[] nodes = twoTracedNodes();
    WeirNode a = nodes[0];
    WeirNode b = nodes[1];
    String key = keyOwnedBy(b, a);
    String traceId = "6bf92f3577b34da6a3ce929d0e0e4736";
    String callerSpanId = "00f067aa0ba902b7";

    HttpResponse<String> answer =
        post(
            a,
            "/v1/GetRateLimits",
            "{\"requests\":[{\"name\":\"tracing\",\"unique_key\":\""
                + key
                + "\",\"hits\":1,\"limit\":10,\"duration\":60000}]}",
            traceId,
            callerSpanId);
    assertThat(answer.statusCode()).isEqualTo(200);
    assertThat(answer.body()).contains(b.advertiseAddress().toString());

    List<OtlpReceiver.Received> trace =
        awaitSpans(
            nodes,
            traceId,
            "POST /v1/GetRateLimits",
            "weir.forward",
            "weir.forward_batch",
            "weir.decide");
    OtlpReceiver.Received front = only(trace, "POST /v1/GetRateLimits");
    OtlpReceiver.Received forward = only(trace, "weir.forward");
    OtlpReceiver.Received decide = only(trace, "weir.decide");
    assertThat(front.service()).isEqualTo("edge-limits");
    assertThat(front.span().getKind()).isEqualTo(Span.SpanKind.SPAN_KIND_SERVER);
    assertThat(hex(front.span().getParentSpanId())).isEqualTo(callerSpanId);
    assertThat(attributes(front.span()))
        .containsEntry("http.request.method", "POST")
        .containsEntry("http.route", "/v1/GetRateLimits")
        .containsEntry("http.response.status_code", "200");
    assertThat(forward.span().getParentSpanId()).isEqualTo(front.span().getSpanId());
    assertThat(only(trace, "weir.forward_batch").span().getParentSpanId())
        .isEqualTo(forward.span().getSpanId());
    assertThat(decide.service()).isEqualTo("weir-b");
    assertThat(decide.span().getParentSpanId()).isEqualTo(forward.span().getSpanId());
    assertThat(attributes(decide.span())).containsEntry("weir.name", "tracing");
    assertNoSecretIn(trace);
  }

  @Test
  void httpJson_withTraceparent_configMatchAndForwardAreChildrenOfTheRequestSpan()
      throws Exception {
    WeirNode[] nodes = twoTracedNodes();
    String traceId = "7bf92f3577b34da6a3ce929d0e0e4736";
    String callerSpanId = "00f067aa0ba902b7";
    StringJoiner descriptors = new StringJoiner(",");
    for (int i = 0; i < 20; i++) {
      descriptors.add(
          "{\"entries\":[{\"key\":\"remote_address\",\"value\":\""
              + SECRET_KEY_PREFIX
              + i
              + "\"}]}");
    }

    HttpResponse<String> answer =
        post(
            nodes[0],
            "/json",
            "{\"domain\":\"edge\",\"descriptors\":[" + descriptors + "]}",
            traceId,
            callerSpanId);
    assertThat(answer.statusCode()).isEqualTo(200);

    // Which of the 20 clients node B owns depends on the ring; 2^-20 that it owns none.
    List<OtlpReceiver.Received> trace =
        awaitSpans(nodes, traceId, "POST /json", "weir.config_match", "weir.decide");
    OtlpReceiver.Received front = only(trace, "POST /json");
    OtlpReceiver.Received match = only(trace, "weir.config_match");
    OtlpReceiver.Received forward = only(trace, "weir.forward");
    assertThat(hex(front.span().getParentSpanId())).isEqualTo(callerSpanId);
    assertThat(attributes(front.span()))
        .containsEntry("http.route", "/json")
        .containsEntry("http.response.status_code", "200");
    assertThat(match.span().getParentSpanId()).isEqualTo(front.span().getSpanId());
    assertThat(attributes(match.span()))
        .containsEntry("weir.domain", "edge")
        .containsEntry("weir.descriptors", "20")
        .containsEntry("weir.rules", "[remote_address]");
    assertThat(forward.span().getParentSpanId()).isEqualTo(front.span().getSpanId());
    assertThat(trace.stream().filter(s -> s.span().getName().equals("weir.decide")))
        .allSatisfy(
            decide ->
                assertThat(decide.span().getParentSpanId()).isEqualTo(forward.span().getSpanId()));
    assertNoSecretIn(trace);
  }

  @Test
  void forwardOfAnUnsampledCall_dropsTheTraceparentACallerPutInAnItem() throws Exception {
    WeirNode[] nodes = twoTracedNodes();
    // B (OTEL_* variables) follows the caller's sampling decision; A, the owner, decides.
    WeirNode front = nodes[1];
    WeirNode owner = nodes[0];
    String key = keyOwnedBy(owner, front);
    String callTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
    String itemTrace = "0af7651916cd43dd8448eb211c80319c";

    GetRateLimitsResp answer =
        getRateLimitsUnsampled(front, callTrace, tracingItem(key), itemTrace);
    assertThat(answer.getResponses(0).getMetadataMap())
        .containsEntry("owner", owner.advertiseAddress().toString());
    flush(nodes);

    assertThat(receiver.trace(itemTrace)).isEmpty();
    assertThat(receiver.trace(callTrace)).isEmpty();
  }

  @Test
  void forwardOfASampledCall_dropsTheTracestateACallerPutInAnItem() throws Exception {
    WeirNode[] nodes = twoTracedNodes();
    WeirNode front = nodes[1];
    WeirNode owner = nodes[0];
    String key = keyOwnedBy(owner, front);
    String callTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
    String itemTrace = "0af7651916cd43dd8448eb211c80319c";

    GetRateLimitsResp answer =
        V1Grpc.newBlockingStub(channel(front, callTrace, "00f067aa0ba902b7"))
            .withDeadlineAfter(10, TimeUnit.SECONDS)
            .getRateLimits(
                GetRateLimitsReq.newBuilder()
                    .addRequests(
                        tracingItem(key)
                            .putMetadata("traceparent", "00-" + itemTrace + "-b7ad6b7169203331-01")
                            .putMetadata("tracestate", "vendor=1"))
                    .build());
    assertThat(answer.getResponses(0).getMetadataMap())
        .containsEntry("owner", owner.advertiseAddress().toString());

    List<OtlpReceiver.Received> trace = awaitSpans(nodes, callTrace, "weir.decide");
    OtlpReceiver.Received forward = only(trace, "weir.forward");
    OtlpReceiver.Received decide = only(trace, "weir.decide");
    assertThat(decide.span().getParentSpanId()).isEqualTo(forward.span().getSpanId());
    assertThat(decide.span().getTraceState()).isEmpty();
    assertThat(forward.span().getTraceState()).isEmpty();
    assertThat(receiver.trace(itemTrace)).isEmpty();
  }

  @Test
  void globalHitsOfAnUnsampledCall_carryNoTraceparentACallerPutInTheItemToTheOwner()
      throws Exception {
    // No GLOBAL sync timer within the test: the hits go when the test flushes them.
    WeirNode[] nodes =
        twoTracedNodes(
            ClusterSettings.defaults().toBuilder().globalSyncWait(Duration.ofMinutes(10)).build());
    WeirNode front = nodes[1];
    WeirNode owner = nodes[0];
    String key = keyOwnedBy(owner, front);
    String callTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
    String itemTrace = "0af7651916cd43dd8448eb211c80319c";

    GetRateLimitsResp answer =
        getRateLimitsUnsampled(
            front, callTrace, tracingItem(key).setBehavior(Behavior.GLOBAL), itemTrace);
    assertThat(answer.getResponses(0).getMetadataMap())
        .containsEntry("owner", owner.advertiseAddress().toString());
    assertThat(front.cluster().global().queuedHits()).isEqualTo(1);
    front.cluster().global().flushHits().get(10, TimeUnit.SECONDS);
    flush(nodes);

    assertThat(receiver.trace(itemTrace)).isEmpty();
    assertThat(receiver.trace(callTrace)).isEmpty();
  }

  @Test
  void unparseableGetRateLimits_spanEndsWithTheRefusal() throws Exception {
    WeirNode[] nodes = twoTracedNodes();
    String traceId = "6bf92f3577b34da6a3ce929d0e0e4736";

    io.grpc.Status refused =
        RawGrpc.unary(
            channel(nodes[0], traceId, "00f067aa0ba902b7"),
            "pb.gubernator.V1/GetRateLimits",
            new byte[] {0x0a, 0x7f, 'x'});

    assertThat(refused.getCode()).isEqualTo(io.grpc.Status.Code.INVALID_ARGUMENT);
    Span span =
        only(
                awaitSpans(nodes, traceId, "pb.gubernator.V1/GetRateLimits"),
                "pb.gubernator.V1/GetRateLimits")
            .span();
    assertThat(span.getStatus().getCode())
        .isEqualTo(io.opentelemetry.proto.trace.v1.Status.StatusCode.STATUS_CODE_ERROR);
    assertThat(attributes(span))
        .containsEntry(
            "rpc.grpc.status_code", String.valueOf(io.grpc.Status.Code.INVALID_ARGUMENT.value()));
  }

  @Test
  void grpcHealthAndLiveChecks_notTracedWhileGetRateLimitsIs() throws Exception {
    WeirNode[] nodes = twoTracedNodes();
    WeirNode a = nodes[0];
    String probeTrace = "5bf92f3577b34da6a3ce929d0e0e4736";
    String callTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
    V1Grpc.V1BlockingStub probe =
        V1Grpc.newBlockingStub(channel(a, probeTrace, "00f067aa0ba902b7"))
            .withDeadlineAfter(10, TimeUnit.SECONDS);
    ManagedChannel plain =
        NettyChannelBuilder.forAddress("127.0.0.1", a.grpcPort()).usePlaintext().build();
    resources.add(() -> plain.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    V1Grpc.V1BlockingStub untraced =
        V1Grpc.newBlockingStub(plain).withDeadlineAfter(10, TimeUnit.SECONDS);

    probe.healthCheck(HealthCheckReq.getDefaultInstance());
    probe.liveCheck(LiveCheckReq.getDefaultInstance());
    untraced.healthCheck(HealthCheckReq.getDefaultInstance());
    untraced.liveCheck(LiveCheckReq.getDefaultInstance());
    V1Grpc.newBlockingStub(channel(a, callTrace, "00f067aa0ba902b7"))
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .getRateLimits(
            GetRateLimitsReq.newBuilder().addRequests(tracingItem(keyOwnedBy(a, a))).build());
    awaitSpans(nodes, callTrace, "pb.gubernator.V1/GetRateLimits");

    assertThat(receiver.trace(probeTrace)).isEmpty();
    assertThat(receiver.spans())
        .extracting(received -> received.span().getName())
        .doesNotContain("pb.gubernator.V1/HealthCheck", "pb.gubernator.V1/LiveCheck");
  }

  @Test
  void tracingOff_noSdkNoInterceptorAndNothingExported() throws Exception {
    Map<String, String> reference =
        Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint(), "TRACING_ENABLED", "false");
    Map<String, String> weir =
        Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint(), "OTEL_SDK_DISABLED", "true");
    assertThat(TracingSettings.fromReference(reference).enabled()).isFalse();
    assertThat(TracingSettings.fromOtel(weir).enabled()).isFalse();
    assertThat(TracingSettings.fromOtel(Map.of()).enabled()).isFalse();
    int grpc = FreePorts.next();
    WeirNode node =
        node(grpc, FreePorts.next(), List.of("127.0.0.1:" + grpc), TracingSettings.fromOtel(weir));

    ManagedChannel channel = channel(node, "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    GetRateLimitsResp answer =
        V1Grpc.newBlockingStub(channel)
            .withDeadlineAfter(10, TimeUnit.SECONDS)
            .getRateLimits(GetRateLimitsReq.newBuilder().addRequests(tracingItem("k")).build());

    assertThat(answer.getResponses(0).getError()).isEmpty();
    assertThat(
            post(
                    node,
                    "/json",
                    "{\"domain\":\"edge\",\"descriptors\":[{\"entries\":"
                        + "[{\"key\":\"remote_address\",\"value\":\"1\"}]}]}",
                    "4bf92f3577b34da6a3ce929d0e0e4736",
                    "00f067aa0ba902b7")
                .statusCode())
        .isEqualTo(200);
    assertThat(node.tracing()).isEmpty();
    assertThat(node.frontDoorTraced()).isFalse();
    // No SDK exists to flush: a bounded wait is the only way to see that nothing arrives.
    assertThat(Await.holdsWithin(Duration.ofMillis(500), () -> !receiver.spans().isEmpty()))
        .isFalse();
  }

  /** Starts node A (reference variables) and node B (OTEL_* variables), both on the ring. */
  private WeirNode[] twoTracedNodes() throws Exception {
    return twoTracedNodes(ClusterSettings.defaults());
  }

  /** Starts node A and node B as above, with {@code cluster}'s settings. */
  private WeirNode[] twoTracedNodes(ClusterSettings cluster) throws Exception {
    return twoTracedNodes(cluster, EnvoySettings.DEFAULTS.withConfig(dir));
  }

  /** Starts node A and node B as above, with {@code cluster}'s and {@code envoy}'s settings. */
  private WeirNode[] twoTracedNodes(ClusterSettings cluster, EnvoySettings envoy)
      throws Exception {
    int[] grpc = {FreePorts.next(), FreePorts.next()};
    int[] peer = {FreePorts.next(), FreePorts.next()};
    List<String> members =
        List.of("127.0.0.1:" + grpc[0] + "@" + peer[0], "127.0.0.1:" + grpc[1] + "@" + peer[1]);
    TracingSettings reference =
        TracingSettings.fromReference(
            Map.of(
                "TRACING_ENABLED", "true",
                "TRACING_EXPORTER_PROTOCOL", "grpc",
                "TRACING_SERVICE_NAME", "edge-limits",
                "TRACING_SERVICE_INSTANCE_ID", "node a",
                "OTEL_EXPORTER_OTLP_ENDPOINT", "127.0.0.1:" + receiver.port(),
                "OTEL_BSP_SCHEDULE_DELAY", "50"));
    TracingSettings otel =
        TracingSettings.fromOtel(
            Map.of(
                "OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint(),
                "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc",
                "OTEL_SERVICE_NAME", "weir-b",
                "OTEL_BSP_SCHEDULE_DELAY", "50"));
    WeirNode b = node(grpc[1], peer[1], cluster.withStaticPeers(members), otel, envoy);
    WeirNode a = node(grpc[0], peer[0], cluster.withStaticPeers(members), reference, envoy);
    Await.until(
        Duration.ofSeconds(10),
        () ->
            a.cluster().membership().ring().peers().size() == 2
                && b.cluster().membership().ring().peers().size() == 2,
        "both members on both rings");
    assertThat(a.frontDoorTraced()).isTrue();
    assertThat(b.frontDoorTraced()).isTrue();
    return new WeirNode[] {a, b};
  }

  private WeirNode node(int grpcPort, int peerPort, List<String> members, TracingSettings tracing)
      throws Exception {
    return node(
        grpcPort, peerPort, ClusterSettings.defaults().withStaticPeers(members), tracing);
  }

  private WeirNode node(
      int grpcPort, int peerPort, ClusterSettings cluster, TracingSettings tracing)
      throws Exception {
    return node(grpcPort, peerPort, cluster, tracing, EnvoySettings.DEFAULTS.withConfig(dir));
  }

  private WeirNode node(
      int grpcPort,
      int peerPort,
      ClusterSettings cluster,
      TracingSettings tracing,
      EnvoySettings envoy)
      throws Exception {
    HostPort address = new HostPort("127.0.0.1", grpcPort);
    WeirConfig config =
        new WeirConfig(address, new HostPort("127.0.0.1", 0), address, 10_000, "info");
    WeirNode node =
        WeirNode.builder(config)
            .cluster(cluster)
            .peers(
                new PeerSettings(
                    new HostPort("127.0.0.1", peerPort),
                    Optional.of(PeerSecret.of("weir-tracing-test")),
                    Optional.empty(),
                    Optional.empty(),
                    false))
            .envoy(envoy)
            .tracing(tracing)
            .start();
    resources.add(node);
    return node;
  }

  /** Returns a channel to {@code node} whose calls carry {@code traceparent} as Envoy sends it. */
  private ManagedChannel channel(WeirNode node, String traceId, String spanId) {
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort())
            .usePlaintext()
            .intercept(Traceparent.interceptor(traceId, spanId))
            .build();
    resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    return channel;
  }

  /**
   * Returns a channel to {@code node} whose calls carry a {@code traceparent} of trace {@code
   * traceId} that is not sampled (flags {@code 00}).
   */
  private ManagedChannel unsampledChannel(WeirNode node, String traceId) {
    Metadata unsampled = new Metadata();
    unsampled.put(
        Metadata.Key.of("traceparent", Metadata.ASCII_STRING_MARSHALLER),
        "00-" + traceId + "-00f067aa0ba902b7-00");
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort())
            .usePlaintext()
            .intercept(MetadataUtils.newAttachHeadersInterceptor(unsampled))
            .build();
    resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    return channel;
  }

  /**
   * Asks {@code node} {@code GetRateLimits} for {@code item}, which carries a sampled {@code
   * traceparent} of trace {@code itemTrace}, in a call of trace {@code callTrace} that is not
   * sampled, and returns the answer.
   */
  private GetRateLimitsResp getRateLimitsUnsampled(
      WeirNode node, String callTrace, RateLimitReq.Builder item, String itemTrace) {
    return V1Grpc.newBlockingStub(unsampledChannel(node, callTrace))
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .getRateLimits(
            GetRateLimitsReq.newBuilder()
                .addRequests(
                    item.putMetadata("traceparent", "00-" + itemTrace + "-b7ad6b7169203331-01"))
                .build());
  }

  /** Returns an item of one hit on {@code key} under the name "tracing", 10 a minute. */
  private static RateLimitReq.Builder tracingItem(String key) {
    return RateLimitReq.newBuilder()
        .setName("tracing")
        .setUniqueKey(key)
        .setHits(1)
        .setLimit(10)
        .setDuration(60_000);
  }

  /**
   * Asks {@code node} {@code ShouldRateLimit} for {@code descriptors} of domain "edge" in a call of
   * trace {@code traceId}, and returns the answer.
   */
  private RateLimitResponse shouldRateLimit(
      WeirNode node, String traceId, RateLimitDescriptor... descriptors) {
    return RateLimitServiceGrpc.newBlockingStub(channel(node, traceId, "00f067aa0ba902b7"))
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .shouldRateLimit(
            RateLimitRequest.newBuilder()
                .setDomain("edge")
                .addAllDescriptors(List.of(descriptors))
                .build());
  }

  /**
   * Asks node A ({@code nodes[0]}) {@code ShouldRateLimit} for 20 clients, each by its remote
   * address in a call of its own whose trace id is {@code firstTraceId} plus the client's number,
   * and waits until node B decided for one of them; returns the trace ids in order.
   */
  private List<String> twentyClientsUntilNodeBDecides(WeirNode[] nodes, long firstTraceId)
      throws InterruptedException {
    List<String> traceIds = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      String traceId = String.format("%032x", firstTraceId + i);
      traceIds.add(traceId);
      RateLimitResponse answer =
          shouldRateLimit(
              nodes[0], traceId, descriptor("remote_address", SECRET_KEY_PREFIX + i));
      assertThat(answer.getOverallCode()).isEqualTo(RateLimitResponse.Code.OK);
    }
    // Which of the 20 clients node B owns depends on the ring; 2^-20 that it owns none.
    Await.until(
        Duration.ofSeconds(10),
        () -> {
          flush(nodes);
          return receiver.spans().stream().anyMatch(s -> s.span().getName().equals("weir.decide"));
        },
        "a decision on node B");
    return traceIds;
  }

  private static RateLimitDescriptor descriptor(String key, String value) {
    return RateLimitDescriptor.newBuilder()
        .addEntries(RateLimitDescriptor.Entry.newBuilder().setKey(key).setValue(value))
        .build();
  }

  /** Posts {@code json} to {@code path} on {@code node}'s HTTP port with a {@code traceparent}. */
  private static HttpResponse<String> post(
      WeirNode node, String path, String json, String traceId, String spanId) throws Exception {
    HttpRequest request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort() + path))
            .timeout(Duration.ofSeconds(10))
            .header("content-type", "application/json")
            .header("traceparent", Traceparent.header(traceId, spanId))
            .POST(HttpRequest.BodyPublishers.ofString(json))
            .build();
    return HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.ofString());
  }

  /** Waits until trace {@code traceId} has a span of each of {@code names}, and returns it. */
  private List<OtlpReceiver.Received> awaitSpans(WeirNode[] nodes, String traceId, String... names)
      throws InterruptedException {
    Await.until(
        Duration.ofSeconds(10),
        () -> {
          flush(nodes);
          List<String> seen =
              receiver.trace(traceId).stream().map(s -> s.span().getName()).toList();
          return seen.containsAll(List.of(names));
        },
        "spans " + List.of(names) + " of trace " + traceId);
    return receiver.trace(traceId);
  }

  private List<OtlpReceiver.Received> awaitTrace(WeirNode[] nodes, String traceId, int spans)
      throws InterruptedException {
    Await.until(
        Duration.ofSeconds(10),
        () -> {
          flush(nodes);
          return receiver.trace(traceId).size() >= spans;
        },
        spans + " spans of trace " + traceId);
    return receiver.trace(traceId);
  }

  private static void flush(WeirNode[] nodes) {
    for (WeirNode node : nodes) {
      node.tracing().orElseThrow().flush();
    }
  }

  /** Returns a key of the name "tracing" that {@code owner} owns on {@code from}'s ring. */
  private static String keyOwnedBy(WeirNode owner, WeirNode from) {
    return RingKeys.ownedBy(
        from.cluster().membership().ring(),
        "tracing",
        SECRET_KEY_PREFIX,
        owner.advertiseAddress().toString());
  }

  /** Asserts that no span of {@code trace} has an attribute carrying a client's key. */
  private static void assertNoSecretIn(List<OtlpReceiver.Received> trace) {
    assertThat(trace)
        .allSatisfy(
            span ->
                assertThat(attributes(span.span()).values())
                    .noneMatch(value -> value.contains(SECRET_KEY_PREFIX)));
  }

  /** Returns a span's attributes, each value as text (an array as {@code [a, b]}). */
  private static Map<String, String> attributes(Span span) {
    Map<String, String> out = new java.util.HashMap<>();
    for (KeyValue kv : span.getAttributesList()) {
      var value = kv.getValue();
      String text =
          switch (value.getValueCase()) {
            case STRING_VALUE -> value.getStringValue();
            case INT_VALUE -> Long.toString(value.getIntValue());
            case BOOL_VALUE -> Boolean.toString(value.getBoolValue());
            case DOUBLE_VALUE -> Double.toString(value.getDoubleValue());
            case ARRAY_VALUE ->
                value.getArrayValue().getValuesList().stream()
                    .map(v -> v.getStringValue())
                    .toList()
                    .toString();
            default -> value.toString();
          };
      out.put(kv.getKey(), text);
    }
    return out;
  }
}
