package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.RawGrpc;
import dev.weir.envoy.EnvoySettings;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.V1Grpc;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.MethodDescriptor.MethodType;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every service on a node's client gRPC port answers a message that is not its request type with
 * {@code INVALID_ARGUMENT} naming the type, and keeps answering well-formed calls.
 */
class MalformedGrpcTest {

  @TempDir static Path dir;
  private final FakeClock clock = new FakeClock();
  private WeirNode node;
  private ManagedChannel channel;

  @AfterEach
  void stop() throws Exception {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (node != null) {
      node.close();
    }
  }

  private void start() throws Exception {
    start("domain: shop\n");
  }

  private void start(String yaml) throws Exception {
    Path config = Files.writeString(dir.resolve("config.yaml"), yaml);
    node =
        WeirNode.builder(TestConfigs.loopback())
            .envoy(EnvoySettings.fromEnvironment(Map.of("WEIR_ENVOY_CONFIG", config.toString())))
            .clock(clock)
            .store(new InMemoryBucketStore(clock))
            .start();
    channel = NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort()).usePlaintext().build();
  }

  @Test
  void rlqsStream_unparseableReport_refusedAndTheStreamNoLongerCounted() throws Exception {
    start();
    String method =
        "envoy.service.rate_limit_quota.v3.RateLimitQuotaService/StreamRateLimitQuotas";

    for (int i = 0; i < 3; i++) {
      Status status =
          RawGrpc.call(
              channel, method, MethodType.BIDI_STREAMING, new byte[] {0x0a, 0x7f, 'x'}, new Metadata());
      assertThat(status.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    }

    Await.until(
        Duration.ofSeconds(10),
        () -> node.registry().get("weir.rlqs.streams").gauge().value() == 0,
        "no RLQS stream left open");
  }

  @ParameterizedTest
  @CsvSource({
    "pb.gubernator.V1/GetRateLimits, UNARY, pb.gubernator.GetRateLimitsReq",
    "pb.gubernator.V1/HealthCheck, UNARY, pb.gubernator.HealthCheckReq",
    "pb.gubernator.V1/LiveCheck, UNARY, pb.gubernator.LiveCheckReq",
    "envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit, UNARY,"
        + " envoy.service.ratelimit.v3.RateLimitRequest",
    "grpc.health.v1.Health/Check, UNARY, grpc.health.v1.HealthCheckRequest",
    "grpc.reflection.v1.ServerReflection/ServerReflectionInfo, BIDI_STREAMING,"
        + " grpc.reflection.v1.ServerReflectionRequest"
  })
  void unparseableMessage_invalidArgumentNamingTheType(
      String method, MethodType type, String requestType) throws Exception {
    start();

    Status status = RawGrpc.call(channel, method, type, new byte[] {0x0a, 0x7f, 'x'}, new Metadata());

    assertThat(status.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(status.getDescription())
        .isEqualTo(
            "request is not a valid "
                + requestType
                + ": While parsing a protocol message, the input ended unexpectedly in the middle"
                + " of a field");
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void shouldRateLimit_headerValueNotUtf8_decidedWithTheBadBytesReplacedNotRefused(boolean gzip)
      throws Exception {
    start(
        """
        domain: shop
        descriptors:
          - key: user
            rate_limit: {unit: hour, requests_per_unit: 2}
        """);
    // Envoy copies header bytes as they are: "\xC3bob" is not UTF-8, which proto3 parsers refuse.
    byte[] invalid = withByteReplaced(shouldRateLimit("Xbob"), (byte) 'X', (byte) 0xC3);
    byte[] otherInvalid = withByteReplaced(shouldRateLimit("Xbob"), (byte) 'X', (byte) 0xFF);
    MethodDescriptor<byte[], RateLimitResponse> method =
        MethodDescriptor.<byte[], RateLimitResponse>newBuilder(
                RawGrpc.BYTES, ProtoUtils.marshaller(RateLimitResponse.getDefaultInstance()))
            .setFullMethodName(RateLimitServiceGrpc.getShouldRateLimitMethod().getFullMethodName())
            .setType(MethodType.UNARY)
            .build();
    CallOptions options = CallOptions.DEFAULT.withCompression(gzip ? "gzip" : "identity");

    List<Code> codes = new ArrayList<>();
    for (byte[] body : List.of(invalid, invalid, otherInvalid)) {
      codes.add(
          ClientCalls.blockingUnaryCall(
                  channel, method, options.withDeadlineAfter(10, TimeUnit.SECONDS), body)
              .getOverallCode());
    }

    assertThat(codes)
        .as("each malformed sequence read as U+FFFD: one counter for both values")
        .containsExactly(Code.OK, Code.OK, Code.OVER_LIMIT);
  }

  @Test
  void compressedMessageOverTheSizeLimitOnceDecompressed_resourceExhausted() throws Exception {
    start();
    GetRateLimitsReq large =
        GetRateLimitsReq.newBuilder()
            .addRequests(
                RateLimitReq.newBuilder()
                    .setName("n")
                    .setUniqueKey("k".repeat(5 << 20))
                    .setHits(1)
                    .setLimit(5)
                    .setDuration(60_000))
            .build();

    Throwable refused =
        catchThrowable(
            () ->
                V1Grpc.newBlockingStub(channel)
                    .withCompression("gzip")
                    .withDeadlineAfter(10, TimeUnit.SECONDS)
                    .getRateLimits(large));

    assertThat(Status.fromThrowable(refused).getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
  }

  @Test
  void shouldRateLimit_traceContextAsLargeAsEnvoyAcceptsFromAClient_decided() throws Exception {
    start(
        """
        domain: shop
        descriptors:
          - key: user
            rate_limit: {unit: hour, requests_per_unit: 1}
        """);
    // With tracing on, Envoy copies the client's tracestate into its call (its header limit: 60 KiB).
    Metadata trace = new Metadata();
    trace.put(Metadata.Key.of("tracestate", Metadata.ASCII_STRING_MARSHALLER), "a=" + "b".repeat(59_000));
    RateLimitServiceGrpc.RateLimitServiceBlockingStub rls =
        RateLimitServiceGrpc.newBlockingStub(channel)
            .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(trace))
            .withDeadlineAfter(10, TimeUnit.SECONDS);
    RateLimitRequest request = RateLimitRequest.parseFrom(shouldRateLimit("bob"));

    assertThat(rls.shouldRateLimit(request).getOverallCode()).isEqualTo(Code.OK);
    assertThat(rls.shouldRateLimit(request).getOverallCode()).isEqualTo(Code.OVER_LIMIT);
  }

  @Test
  void getRateLimits_uniqueKeyNotUtf8_answeredWithTheBadBytesReplaced() throws Exception {
    start();
    byte[] body =
        withByteReplaced(
            GetRateLimitsReq.newBuilder()
                .addRequests(
                    RateLimitReq.newBuilder()
                        .setName("n")
                        .setUniqueKey("Xk")
                        .setHits(1)
                        .setLimit(5)
                        .setDuration(60_000))
                .build()
                .toByteArray(),
            (byte) 'X',
            (byte) 0xC3);
    MethodDescriptor<byte[], GetRateLimitsResp> method =
        MethodDescriptor.<byte[], GetRateLimitsResp>newBuilder(
                RawGrpc.BYTES, ProtoUtils.marshaller(GetRateLimitsResp.getDefaultInstance()))
            .setFullMethodName(V1Grpc.SERVICE_NAME + "/GetRateLimits")
            .setType(MethodType.UNARY)
            .build();

    GetRateLimitsResp answer =
        ClientCalls.blockingUnaryCall(
            channel, method, CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS), body);

    assertThat(answer.getResponses(0).getError()).isEmpty();
    assertThat(answer.getResponses(0).getRemaining()).isEqualTo(4);
  }

  private static byte[] shouldRateLimit(String user) {
    return RateLimitRequest.newBuilder()
        .setDomain("shop")
        .addDescriptors(
            RateLimitDescriptor.newBuilder()
                .addEntries(
                    RateLimitDescriptor.Entry.newBuilder().setKey("user").setValue(user)))
        .build()
        .toByteArray();
  }

  private static byte[] withByteReplaced(byte[] message, byte from, byte to) {
    byte[] out = message.clone();
    int at = new String(out, StandardCharsets.ISO_8859_1).indexOf((char) from);
    assertThat(at).isNotNegative();
    out[at] = to;
    return out;
  }

  @Test
  void afterMalformedCalls_wellFormedCallsAnswered() throws Exception {
    start();
    for (int i = 0; i < 20; i++) {
      RawGrpc.unary(channel, V1Grpc.SERVICE_NAME + "/GetRateLimits", new byte[] {(byte) i});
    }

    var response = V1Grpc.newBlockingStub(channel).getRateLimits(TestRequests.oneHit(5));

    assertThat(response.getResponses(0).getRemaining()).isEqualTo(4);
  }
}
