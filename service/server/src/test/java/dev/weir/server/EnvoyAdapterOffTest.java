package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.envoy.EnvoySettings;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class EnvoyAdapterOffTest {

  private final FakeClock clock = new FakeClock();
  private WeirNode node;
  private ManagedChannel channel;

  @BeforeEach
  void start() throws Exception {
    node =
        WeirNode.builder(TestConfigs.loopback())
            .clock(clock)
            .store(new InMemoryBucketStore(clock))
            .start();
    channel = NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort()).usePlaintext().build();
  }

  @AfterEach
  void stop() throws Exception {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    node.close();
  }

  @Test
  void postJson_adapterOff_404SayingHowToTurnItOn() throws Exception {
    HttpResponse<String> response =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort() + "/json"))
                    .POST(HttpRequest.BodyPublishers.ofString("{\"domain\":\"demo\"}"))
                    .build(),
                HttpResponse.BodyHandlers.ofString());

    assertThat(response.statusCode()).isEqualTo(404);
    assertThat(response.body())
        .isEqualTo(
            "{\"code\":5,\"message\":\"the Envoy rate-limit service is off on this node: set"
                + " WEIR_ENVOY_CONFIG to a descriptor YAML file or folder, or"
                + " WEIR_ENVOY_CONFIG_SOURCE=xds (server WEIR_ENVOY_XDS_SERVER_URL, default"
                + " localhost:18000), to serve ShouldRateLimit and POST /json"
                + " (README.md#as-envoys-rate-limit-service)\","
                + "\"details\":[]}");
  }

  @Test
  void shouldRateLimit_adapterOff_unimplementedSayingHowToTurnItOn() {
    RateLimitServiceGrpc.RateLimitServiceBlockingStub stub =
        RateLimitServiceGrpc.newBlockingStub(channel);

    RateLimitRequest request = RateLimitRequest.newBuilder().setDomain("d").build();

    assertThatThrownBy(() -> stub.shouldRateLimit(request))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNIMPLEMENTED);
              assertThat(e.getStatus().getDescription()).isEqualTo(EnvoyAdapterOff.MESSAGE);
            });
    assertThat(node.envoyDomains()).isEmpty();
  }

  @Test
  void unknownMethodsOfTheRateLimitService_grpcsOwnAnswerAndNoMetricLabelOfTheirOwn() {
    for (int i = 0; i < 20; i++) {
      assertGrpcsOwnUnimplemented(RateLimitServiceGrpc.SERVICE_NAME + "/X" + i);
    }

    assertThat(node.registry().scrape()).doesNotContain("RateLimitService/X");
  }

  @Test
  void otherUnknownMethod_grpcsOwnAnswer() {
    assertGrpcsOwnUnimplemented("no.such.Service/Call");
  }

  /** Calls {@code fullMethodName} and expects gRPC's own UNIMPLEMENTED, not the adapter's. */
  private void assertGrpcsOwnUnimplemented(String fullMethodName) {
    MethodDescriptor<InputStream, InputStream> method =
        MethodDescriptor.<InputStream, InputStream>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName(fullMethodName)
            .setRequestMarshaller(Bytes.INSTANCE)
            .setResponseMarshaller(Bytes.INSTANCE)
            .build();

    assertThatThrownBy(
            () ->
                ClientCalls.blockingUnaryCall(
                    channel,
                    method,
                    io.grpc.CallOptions.DEFAULT,
                    new ByteArrayInputStream(new byte[0])))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNIMPLEMENTED);
              assertThat(e.getStatus().getDescription()).doesNotContain("WEIR_ENVOY_CONFIG");
            });
  }

  @Test
  void envoyLine_offOnAndManyDomains() {
    EnvoySettings on =
        EnvoySettings.fromEnvironment(Map.of("WEIR_ENVOY_CONFIG", "/etc/weir/ratelimit"));

    assertThat(ServeCommand.envoyLine(EnvoySettings.DEFAULTS, Optional.empty()))
        .isEqualTo(
            "Envoy rate-limit service: off (set WEIR_ENVOY_CONFIG to a descriptor YAML file or"
                + " folder, or WEIR_ENVOY_CONFIG_SOURCE=xds (server WEIR_ENVOY_XDS_SERVER_URL,"
                + " default localhost:18000), to serve ShouldRateLimit and POST /json)");
    assertThat(ServeCommand.envoyLine(on, Optional.of(List.of("demo"))))
        .isEqualTo(
            "Envoy rate-limit service: on, WEIR_ENVOY_CONFIG=/etc/weir/ratelimit, 1 domain: demo");
    assertThat(ServeCommand.envoyLine(on, Optional.of(List.of())))
        .endsWith(", no domain yet (WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG)");
    EnvoySettings xds =
        EnvoySettings.fromEnvironment(
            Map.of(
                "WEIR_ENVOY_CONFIG_SOURCE", "xds",
                "WEIR_ENVOY_XDS_SERVER_URL", "control-plane:18000",
                "WEIR_ENVOY_XDS_NODE_ID", "weir-1"));
    assertThat(ServeCommand.envoyLine(xds, Optional.of(List.of("demo"))))
        .isEqualTo(
            "Envoy rate-limit service: on, WEIR_ENVOY_CONFIG_SOURCE=xds from control-plane:18000"
                + " as node weir-1, 1 domain: demo");
    List<String> many = IntStream.range(0, 25).mapToObj(i -> "d" + (char) ('a' + i)).toList();
    assertThat(ServeCommand.envoyLine(on, Optional.of(many)))
        .endsWith(
            "25 domains: da, db, dc, dd, de, df, dg, dh, di, dj, dk, dl, dm, dn, do, dp, dq, dr,"
                + " ds, dt and 5 more");
  }

  @Test
  void envoyLine_xdsBeforeItsFirstSet_saysItWaitsForTheServer() {
    EnvoySettings xds =
        EnvoySettings.fromEnvironment(
            Map.of(
                "WEIR_ENVOY_CONFIG_SOURCE", "xds",
                "WEIR_ENVOY_XDS_SERVER_URL", "control-plane:18000",
                "WEIR_ENVOY_XDS_NODE_ID", "weir-1"));

    assertThat(ServeCommand.envoyLine(xds, Optional.of(List.of())))
        .isEqualTo(
            "Envoy rate-limit service: on, WEIR_ENVOY_CONFIG_SOURCE=xds from control-plane:18000"
                + " as node weir-1, no domain yet (waiting for the xDS server's first set)");
  }

  private enum Bytes implements MethodDescriptor.Marshaller<InputStream> {
    INSTANCE;

    @Override
    public InputStream stream(InputStream value) {
      return value;
    }

    @Override
    public InputStream parse(InputStream stream) {
      return stream;
    }
  }
}
