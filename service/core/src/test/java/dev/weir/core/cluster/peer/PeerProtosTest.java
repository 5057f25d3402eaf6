package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.RateLimitResp;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class PeerProtosTest {

  @ParameterizedTest
  @EnumSource(Status.class)
  void response_statusCrossesTheWireByName(Status status) {
    RateLimitResp wire =
        PeerProtos.toProto(new RateLimitResponse(status, 10, 3, 1_000, "", Map.of()));

    assertThat(wire.getStatus().name()).isEqualTo(status.name());
    assertThat(PeerProtos.fromProto(wire).status()).isEqualTo(status);
  }

  @ParameterizedTest
  @EnumSource(Status.class)
  void tokenBucketSnapshot_statusCrossesTheWireByName(Status status) {
    BucketSnapshot wire =
        PeerProtos.toSnapshot("k", new TokenBucketState(status, 10, 1_000, 3, 5, 1_005));

    assertThat(wire.getTokenBucket().getStatus().name()).isEqualTo(status.name());
    assertThat(PeerProtos.fromSnapshot(wire).orElseThrow())
        .isEqualTo(new TokenBucketState(status, 10, 1_000, 3, 5, 1_005));
  }

  @ParameterizedTest
  @EnumSource(dev.weir.proto.gubernator.Status.class)
  void statusOf_everyWireStatus_theModelStatusOfThatName(dev.weir.proto.gubernator.Status wire) {
    if (wire != dev.weir.proto.gubernator.Status.UNRECOGNIZED) {
      assertThat(PeerProtos.statusOf(wire.getNumber()).name()).isEqualTo(wire.name());
      assertThat(PeerProtos.toProto(PeerProtos.statusOf(wire.getNumber()))).isEqualTo(wire);
    }
  }

  @org.junit.jupiter.api.Test
  void request_metadataUpToTheBound_forwarded_largerMetadata_leftOut() {
    dev.weir.core.model.RateLimitRequest.Builder item =
        dev.weir.core.model.RateLimitRequest.builder("n", "k").hits(1).limit(10).duration(1000);
    Map<String, String> traceContext = Map.of("traceparent", "00-" + "a".repeat(32) + "-01");
    Map<String, String> huge = Map.of("x", "y".repeat(PeerProtos.MAX_FORWARDED_METADATA_BYTES));

    assertThat(PeerProtos.toProto(item.metadata(traceContext).build()).getMetadataMap())
        .isEqualTo(traceContext);
    assertThat(PeerProtos.toProto(item.metadata(huge).build()).getMetadataMap()).isEmpty();
  }

  @Test
  void toProto_metadataOverTheBound_stillCarriesTheTimeZoneOfAGregorianWindow() {
    Map<String, String> hugeWithZone =
        Map.of(
            "x",
            "y".repeat(PeerProtos.MAX_FORWARDED_METADATA_BYTES),
            "time_zone",
            "Europe/Berlin");

    assertThat(forwardedMetadata(hugeWithZone)).isEqualTo(Map.of("time_zone", "Europe/Berlin"));
  }

  @Test
  void toProto_metadataOverTheBound_stillCarriesTheTraceContext() {
    String traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    Map<String, String> hugeWithTrace =
        Map.of(
            "x",
            "y".repeat(PeerProtos.MAX_FORWARDED_METADATA_BYTES),
            PeerProtos.TRACEPARENT,
            traceparent);

    assertThat(forwardedMetadata(hugeWithTrace)).isEqualTo(Map.of("traceparent", traceparent));
  }

  @Test
  void toProto_handedOnItemOverTheBound_stillCarriesItsMarkAndTimeZone() {
    Map<String, String> nearTheBound =
        Map.of(
            "x",
            "y".repeat(PeerProtos.MAX_FORWARDED_METADATA_BYTES - 40),
            "time_zone",
            "Europe/Berlin",
            PeerProtos.HANDED_ON,
            "old-owner.weir.svc.cluster.local:1051");

    assertThat(forwardedMetadata(nearTheBound))
        .isEqualTo(
            Map.of(
                "time_zone",
                "Europe/Berlin",
                PeerProtos.HANDED_ON,
                "old-owner.weir.svc.cluster.local:1051"));
  }

  @Test
  void toProto_queuedGlobalHitsHandedOnOverTheBound_stillCarryTheirSender() {
    Map<String, String> nearTheBound =
        Map.of(
            "x",
            "y".repeat(PeerProtos.MAX_FORWARDED_METADATA_BYTES - 40),
            PeerProtos.QUEUED_BY,
            "next-owner.weir.svc.cluster.local:1051",
            PeerProtos.HANDED_ON,
            "old-owner.weir.svc.cluster.local:1051");

    assertThat(forwardedMetadata(nearTheBound))
        .isEqualTo(
            Map.of(
                PeerProtos.QUEUED_BY,
                "next-owner.weir.svc.cluster.local:1051",
                PeerProtos.HANDED_ON,
                "old-owner.weir.svc.cluster.local:1051"));
  }

  /** The metadata a peer call carries for an item of {@code metadata}. */
  private static Map<String, String> forwardedMetadata(Map<String, String> metadata) {
    return PeerProtos.toProto(
            dev.weir.core.model.RateLimitRequest.builder("n", "k")
                .duration(2)
                .metadata(metadata)
                .build())
        .getMetadataMap();
  }
}
