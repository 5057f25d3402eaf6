package dev.weir.gubernator;

import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.grpc.EncodedMessage;
import dev.weir.core.grpc.MessageBytes;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.MethodDescriptor;
import io.grpc.ServiceDescriptor;
import java.io.IOException;
import java.io.InputStream;
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
              .toBuilder(new RequestsMarshaller(), new AnswersMarshaller())
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

  /** Reads a {@code GetRateLimitsReq} into core requests; writes them as one for a client. */
  private static final class RequestsMarshaller
      implements MethodDescriptor.Marshaller<List<RateLimitRequest>> {

    @Override
    public InputStream stream(List<RateLimitRequest> items) {
      GetRateLimitsReq.Builder request = GetRateLimitsReq.newBuilder();
      items.forEach(item -> request.addRequests(PeerProtos.toProto(item)));
      return new EncodedMessage(request.build().toByteArray());
    }

    @Override
    public List<RateLimitRequest> parse(InputStream stream) {
      try {
        return GetRateLimitsCodec.decode(MessageBytes.readAll(stream));
      } catch (IOException e) {
        throw MessageBytes.unparseable(e);
      }
    }
  }

  /** Writes core answers as a {@code GetRateLimitsResp}; reads one back for a client. */
  private static final class AnswersMarshaller
      implements MethodDescriptor.Marshaller<List<RateLimitResponse>> {

    @Override
    public InputStream stream(List<RateLimitResponse> answers) {
      return new EncodedMessage(GetRateLimitsCodec.encode(answers));
    }

    @Override
    public List<RateLimitResponse> parse(InputStream stream) {
      try {
        return GetRateLimitsResp.parseFrom(stream).getResponsesList().stream()
            .map(PeerProtos::fromProto)
            .toList();
      } catch (IOException e) {
        throw MessageBytes.unparseable(e);
      }
    }
  }
}
