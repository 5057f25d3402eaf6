package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.envoy.EnvoySettings;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.V1Grpc;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Which limit fired, as a node's front doors tell it: Envoy's dynamic metadata and the native
 * answers' metadata, over real gRPC on loopback.
 */
class WhichLimitFiredTest {

  private static final String YAML =
      """
      domain: shop
      descriptors:
        - key: remote_address
          rate_limit: {unit: minute, requests_per_unit: 1, name: per-ip}
        - key: path
          descriptors:
            - key: user
              rate_limit: {unit: hour, requests_per_unit: 1}
        - key: trial
          shadow_mode: true
          rate_limit: {unit: second, requests_per_unit: 1, name: trial-rule}
      """;

  @TempDir Path dir;
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

  private void start(Map<String, String> env) throws Exception {
    Files.writeString(dir.resolve("shop.yaml"), YAML);
    Map<String, String> all = new HashMap<>(env);
    all.put("WEIR_ENVOY_CONFIG", dir.toString());
    node =
        WeirNode.builder(TestConfigs.loopback())
            .envoy(EnvoySettings.fromEnvironment(all))
            .clock(clock)
            .store(new InMemoryBucketStore(clock))
            .start();
    channel = NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort()).usePlaintext().build();
  }

  private RateLimitResponse call(String... keyValues) {
    RateLimitDescriptor.Builder d = RateLimitDescriptor.newBuilder();
    for (int i = 0; i < keyValues.length; i += 2) {
      d.addEntries(
          RateLimitDescriptor.Entry.newBuilder().setKey(keyValues[i]).setValue(keyValues[i + 1]));
    }
    return RateLimitServiceGrpc.newBlockingStub(channel)
        .shouldRateLimit(RateLimitRequest.newBuilder().setDomain("shop").addDescriptors(d).build());
  }

  private static Value text(String s) {
    return Value.newBuilder().setStringValue(s).build();
  }

  private static Value number(double d) {
    return Value.newBuilder().setNumberValue(d).build();
  }

  private static Value bool(boolean b) {
    return Value.newBuilder().setBoolValue(b).build();
  }

  @Test
  void envoy_overLimit_namesTheRuleItsLimitAndUnit() throws Exception {
    start(Map.of("WEIR_ENVOY_RESPONSE_DYNAMIC_METADATA", "true"));

    RateLimitResponse first = call("remote_address", "10.0.0.1");
    RateLimitResponse second = call("remote_address", "10.0.0.1");

    assertThat(first.getDynamicMetadata().getFieldsMap()).doesNotContainKey("overLimitRule");
    assertThat(second.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(second.getDynamicMetadata().getFieldsMap())
        .containsEntry("domain", text("shop"))
        .containsEntry("overLimitRule", text("per-ip"))
        .containsEntry("overLimitRequestsPerUnit", number(1))
        .containsEntry("overLimitUnit", text("MINUTE"))
        .containsEntry("overLimitShadowMode", bool(false));
  }

  @Test
  void envoy_overLimitOfAnUnnamedRule_namesItsDescriptorPath() throws Exception {
    start(Map.of("WEIR_ENVOY_RESPONSE_DYNAMIC_METADATA", "true"));

    call("path", "/a", "user", "u1");
    Struct metadata = call("path", "/a", "user", "u1").getDynamicMetadata();

    assertThat(metadata.getFieldsMap())
        .containsEntry("overLimitRule", text("path.user"))
        .containsEntry("overLimitUnit", text("HOUR"));
  }

  @Test
  void envoy_shadowModeRule_answersOkAndSaysShadowMode() throws Exception {
    start(Map.of("WEIR_ENVOY_RESPONSE_DYNAMIC_METADATA", "true"));

    call("trial", "t");
    RateLimitResponse shadowed = call("trial", "t");

    assertThat(shadowed.getOverallCode()).isEqualTo(Code.OK);
    assertThat(shadowed.getDynamicMetadata().getFieldsMap())
        .containsEntry("overLimitRule", text("trial-rule"))
        .containsEntry("overLimitShadowMode", bool(true));
  }

  @Test
  void envoy_globalShadowMode_saysShadowMode() throws Exception {
    start(Map.of("WEIR_ENVOY_RESPONSE_DYNAMIC_METADATA", "true", "WEIR_ENVOY_SHADOW_MODE", "true"));

    call("remote_address", "10.0.0.2");
    RateLimitResponse shadowed = call("remote_address", "10.0.0.2");

    assertThat(shadowed.getOverallCode()).isEqualTo(Code.OK);
    assertThat(shadowed.getDynamicMetadata().getFieldsMap())
        .containsEntry("overLimitRule", text("per-ip"))
        .containsEntry("overLimitShadowMode", bool(true));
  }

  @Test
  void envoy_dynamicMetadataOff_sendsNone() throws Exception {
    start(Map.of());

    call("remote_address", "10.0.0.3");
    RateLimitResponse over = call("remote_address", "10.0.0.3");

    assertThat(over.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(over.hasDynamicMetadata()).isFalse();
  }

  @Test
  void native_overLimit_namesTheLimitInTheMetadata_underLimitHasNone() throws Exception {
    start(Map.of());
    V1Grpc.V1BlockingStub stub = V1Grpc.newBlockingStub(channel);
    GetRateLimitsReq req = TestRequests.oneHit(1);

    RateLimitResp first = stub.getRateLimits(req).getResponses(0);
    RateLimitResp second = stub.getRateLimits(req).getResponses(0);

    assertThat(first.getMetadataMap()).isEmpty();
    assertThat(second.getStatus()).isEqualTo(dev.weir.proto.gubernator.Status.OVER_LIMIT);
    assertThat(second.getMetadataMap())
        .containsExactlyInAnyOrderEntriesOf(
            Map.of(
                "over_limit.name", "n",
                "over_limit.limit", "1",
                "over_limit.duration", "60000"));
  }
}
