package dev.weir.gubernator;

import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.health.HealthStatus;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.HealthCheckResp;
import dev.weir.proto.gubernator.PeerHealthResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import java.util.ArrayList;
import java.util.List;

/**
 * Translates between {@code pb.gubernator} messages and the core model (requests and responses as
 * {@link PeerProtos} maps them for the peers too). Enum numbers pass through
 * unchanged (an unknown algorithm number reaches the engine, which reports it per item), and an
 * absent {@code created_at} becomes 0, which the limiter replaces with the node's clock.
 */
public final class ProtoMapping {

  /** The {@code status} of a healthy {@code HealthCheckResp}. */
  public static final String HEALTHY = "healthy";

  /** The {@code status} of an unhealthy {@code HealthCheckResp}. */
  public static final String UNHEALTHY = "unhealthy";

  private ProtoMapping() {}

  /** Returns the core request of {@code req}, as the peer protocol maps it too. */
  public static RateLimitRequest toModel(RateLimitReq req) {
    return PeerProtos.fromProto(req);
  }

  /** Returns the core requests of {@code req}, in order. */
  public static List<RateLimitRequest> toModel(GetRateLimitsReq req) {
    List<RateLimitRequest> items = new ArrayList<>(req.getRequestsCount());
    for (RateLimitReq item : req.getRequestsList()) {
      items.add(toModel(item));
    }
    return items;
  }

  /** Returns the wire response of {@code response}, as the peer protocol maps it too. */
  public static RateLimitResp toProto(RateLimitResponse response) {
    return PeerProtos.toProto(response);
  }

  /** Returns the wire response of {@code responses}, in order. */
  public static GetRateLimitsResp toProto(List<RateLimitResponse> responses) {
    GetRateLimitsResp.Builder builder = GetRateLimitsResp.newBuilder();
    for (RateLimitResponse response : responses) {
      builder.addResponses(toProto(response));
    }
    return builder.build();
  }

  /** Returns the wire health answer of {@code health}. */
  public static HealthCheckResp toProto(HealthStatus health) {
    HealthCheckResp.Builder builder =
        HealthCheckResp.newBuilder()
            .setStatus(health.healthy() ? HEALTHY : UNHEALTHY)
            .setMessage(health.message())
            .setPeerCount(health.peerCount())
            .setAdvertiseAddress(health.advertiseAddress());
    for (String peer : health.peers()) {
      builder.addLocalPeers(
          PeerHealthResp.newBuilder().setGrpcAddress(peer).setDataCenter(health.dataCenter()));
    }
    return builder.build();
  }
}
