package dev.weir.core.cluster.peer;

import dev.weir.core.grpc.BytesMarshaller;
import dev.weir.proto.gubernator.PeersV1Grpc;
import io.grpc.MethodDescriptor;
import io.grpc.ServiceDescriptor;

/**
 * The service {@code pb.gubernator.PeersV1} as Weir's peers serve and call it: {@code
 * ForwardBatches} carries core requests and answers, read and written by {@link ForwardCodec};
 * every other method is the generated one. The names, the wire format and the schema descriptors
 * are those of {@link PeersV1Grpc}, so a peer built on the generated stubs talks to it unchanged.
 */
public final class PeerMethods {

  /** {@code pb.gubernator.PeersV1/ForwardBatches} on core requests and answers. */
  static final MethodDescriptor<ForwardCodec.Batch, ForwardCodec.Answers> FORWARD_BATCHES =
      PeersV1Grpc.getForwardBatchesMethod()
          .toBuilder(
              new BytesMarshaller<ForwardCodec.Batch>(
                  ForwardCodec::encode, ForwardCodec::decodeBatch),
              new BytesMarshaller<ForwardCodec.Answers>(
                  ForwardCodec::encode, ForwardCodec::decodeAnswers))
          .build();

  /** {@code pb.gubernator.PeersV1} with {@link #FORWARD_BATCHES} and the generated methods. */
  public static final ServiceDescriptor SERVICE = service();

  private PeerMethods() {}

  private static ServiceDescriptor service() {
    ServiceDescriptor generated = PeersV1Grpc.getServiceDescriptor();
    ServiceDescriptor.Builder builder =
        ServiceDescriptor.newBuilder(generated.getName())
            .setSchemaDescriptor(generated.getSchemaDescriptor());
    for (MethodDescriptor<?, ?> method : generated.getMethods()) {
      builder.addMethod(
          method.getFullMethodName().equals(FORWARD_BATCHES.getFullMethodName())
              ? FORWARD_BATCHES
              : method);
    }
    return builder.build();
  }
}
