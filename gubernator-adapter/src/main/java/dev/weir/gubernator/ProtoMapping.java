package dev.weir.gubernator;

import dev.weir.core.limiter.HealthStatus;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.HealthCheckResp;
import dev.weir.proto.gubernator.PeerHealthResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Translates between {@code pb.gubernator} messages and the core model. Enum numbers pass through
 * unchanged (an unknown algorithm number reaches the engine, which reports it per item), and an
 * absent {@code created_at} becomes 0, which the limiter replaces with the node's clock.
 */
public final class ProtoMapping {

  /** The {@code status} of a healthy {@code HealthCheckResp}. */
  public static final String HEALTHY = "healthy";

  /** The {@code status} of an unhealthy {@code HealthCheckResp}. */
  public static final String UNHEALTHY = "unhealthy";

  private ProtoMapping() {}

  /** Returns the core request of {@code req}. */
  public static RateLimitRequest toModel(RateLimitReq req) {
    return new RateLimitRequest(
        req.getName(),
        req.getUniqueKey(),
        req.getHits(),
        req.getLimit(),
        req.getDuration(),
        req.getAlgorithmValue(),
        req.getBehaviorValue(),
        req.getBurst(),
        req.hasCreatedAt() ? req.getCreatedAt() : 0,
        req.getMetadataCount() == 0 ? Map.of() : req.getMetadataMap());
  }

  /** Returns the core requests of {@code req}, in order. */
  public static List<RateLimitRequest> toModel(GetRateLimitsReq req) {
    List<RateLimitRequest> items = new ArrayList<>(req.getRequestsCount());
    for (RateLimitReq item : req.getRequestsList()) {
      items.add(toModel(item));
    }
    return items;
  }

  /** Returns the wire response of {@code response}. */
  public static RateLimitResp toProto(RateLimitResponse response) {
    RateLimitResp.Builder out =
        RateLimitResp.newBuilder()
            .setStatus(
                response.status() == dev.weir.core.model.Status.OVER_LIMIT
                    ? Status.OVER_LIMIT
                    : Status.UNDER_LIMIT)
            .setLimit(response.limit())
            .setRemaining(response.remaining())
            .setResetTime(response.resetTime());
    if (response.isError()) {
      out.setError(response.error());
    }
    if (!response.metadata().isEmpty()) {
      out.putAllMetadata(response.metadata());
    }
    return out.build();
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
      builder.addLocalPeers(PeerHealthResp.newBuilder().setGrpcAddress(peer));
    }
    return builder.build();
  }
}
