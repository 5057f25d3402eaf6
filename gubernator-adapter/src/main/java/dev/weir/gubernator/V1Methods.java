package dev.weir.gubernator;

import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.grpc.BytesMarshaller;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.MethodDescriptor;
import io.grpc.ServiceDescriptor;
import java.io.IOException;
import java.util.List;

/**
 * The service {@code pb.gubernator.V1} as the native front door serves it: {@code GetRateLimits}
 * carries core requests and answers, read and written by {@link GetRateLimitsCodec}; {@code
 * HealthCheck} and {@code LiveCheck} are the generated methods. The names, the wire format and the
 * schema descriptors (which server reflection reads) are those of {@link V1Grpc}, so any Gubernator
 * client, generated stubs included, calls it unchanged.
 */
public final class V1Methods {

  /** {@code pb.gubernator.V1/GetRateLimits} on core requests and answers. */
  public static final MethodDescriptor<List<RateLimitRequest>, List<RateLimitResponse>>
      GET_RATE_LIMITS =
          V1Grpc.getGetRateLimitsMethod()
              .toBuilder(
                  new BytesMarshaller<List<RateLimitRequest>>(
                      V1Methods::encodeRequests, GetRateLimitsCodec::decode),
                  new BytesMarshaller<List<RateLimitResponse>>(
                      GetRateLimitsCodec::encode, V1Methods::decodeAnswers))
              .build();

  /** {@code pb.gubernator.V1} with {@link #GET_RATE_LIMITS} and the generated health methods. */
  public static final ServiceDescriptor SERVICE =
      ServiceDescriptor.newBuilder(V1Grpc.SERVICE_NAME)
          .setSchemaDescriptor(V1Grpc.getServiceDescriptor().getSchemaDescriptor())
          .addMethod(GET_RATE_LIMITS)
          .addMethod(V1Grpc.getHealthCheckMethod())
          .addMethod(V1Grpc.getLiveCheckMethod())
          .build();

  private V1Methods() {}

  /** Writes core requests as a {@code GetRateLimitsReq}, for a client. */
  private static byte[] encodeRequests(List<RateLimitRequest> items) {
    GetRateLimitsReq.Builder request = GetRateLimitsReq.newBuilder();
    items.forEach(item -> request.addRequests(PeerProtos.toProto(item)));
    return request.build().toByteArray();
  }

  /** Reads a {@code GetRateLimitsResp} into core answers, for a client. */
  private static List<RateLimitResponse> decodeAnswers(byte[] bytes) throws IOException {
    return GetRateLimitsResp.parseFrom(bytes).getResponsesList().stream()
        .map(PeerProtos::fromProto)
        .toList();
  }
}
