package dev.weir.gubernator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import dev.weir.core.health.HealthStatus;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.proto.gubernator.Algorithm;
import dev.weir.proto.gubernator.HealthCheckResp;
import dev.weir.proto.gubernator.PeerHealthResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ProtoMappingTest {

  private static RateLimitReq.Builder req() {
    return RateLimitReq.newBuilder()
        .setName("n")
        .setUniqueKey("k")
        .setHits(2)
        .setLimit(10)
        .setDuration(1000)
        .setAlgorithm(Algorithm.LEAKY_BUCKET)
        .setBurst(20)
        .putMetadata("traceparent", "x");
  }

  @Test
  void toModel_allFields_copied() {
    RateLimitRequest model =
        ProtoMapping.toModel(req().setBehaviorValue(34).setCreatedAt(99).build());

    assertThat(model)
        .isEqualTo(
            new RateLimitRequest("n", "k", 2, 10, 1000, 1, 34, 20, 99, Map.of("traceparent", "x")));
  }

  @Test
  void toModel_createdAtAbsent_zero() {
    assertThat(ProtoMapping.toModel(req().build()).createdAt()).isZero();
  }

  @Test
  void toModel_unknownAlgorithmNumber_preserved() {
    assertThat(ProtoMapping.toModel(req().setAlgorithmValue(42).build()).algorithm()).isEqualTo(42);
  }

  @Test
  void toProto_response_allFieldsCopied() {
    RateLimitResp resp =
        ProtoMapping.toProto(
            new RateLimitResponse(Status.OVER_LIMIT, 10, 0, 1234, "", Map.of("owner", "a:1")));

    assertThat(resp)
        .isEqualTo(
            RateLimitResp.newBuilder()
                .setStatus(dev.weir.proto.gubernator.Status.OVER_LIMIT)
                .setLimit(10)
                .setResetTime(1234)
                .putMetadata("owner", "a:1")
                .build());
  }

  @Test
  void toProto_errorResponse_errorCopied() {
    assertThat(ProtoMapping.toProto(RateLimitResponse.error("boom")).getError()).isEqualTo("boom");
  }

  @Test
  void toProto_health_peersAsLocalPeers() {
    HealthCheckResp resp =
        ProtoMapping.toProto(new HealthStatus(true, "", 2, "a:1", List.of("a:1", "b:1")));

    assertThat(resp.getStatus()).isEqualTo("healthy");
    assertThat(resp.getPeerCount()).isEqualTo(2);
    assertThat(resp.getAdvertiseAddress()).isEqualTo("a:1");
    assertThat(resp.getLocalPeersList())
        .extracting(PeerHealthResp::getGrpcAddress)
        .containsExactly("a:1", "b:1");
  }

  @Test
  void toProto_healthWithDataCenter_everyLocalPeerInIt() {
    HealthCheckResp resp =
        ProtoMapping.toProto(new HealthStatus(true, "", 2, "a:1", List.of("a:1", "b:1"), "eu-1"));

    assertThat(resp.getLocalPeersList())
        .extracting(PeerHealthResp::getGrpcAddress, PeerHealthResp::getDataCenter)
        .containsExactly(tuple("a:1", "eu-1"), tuple("b:1", "eu-1"));
    assertThat(resp.getRegionPeersList()).isEmpty();
  }
}
