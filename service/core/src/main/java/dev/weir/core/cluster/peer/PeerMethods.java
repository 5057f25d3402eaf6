package dev.weir.core.cluster.peer;

import dev.weir.core.grpc.EncodedMessage;
import dev.weir.core.grpc.MessageBytes;
import dev.weir.proto.gubernator.PeersV1Grpc;
import io.grpc.MethodDescriptor;
import io.grpc.ServiceDescriptor;
import java.io.IOException;
import java.io.InputStream;

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
          .toBuilder(new BatchMarshaller(), new AnswersMarshaller())
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

  /** Writes and reads a {@code ForwardBatch}. */
  private static final class BatchMarshaller
      implements MethodDescriptor.Marshaller<ForwardCodec.Batch> {

    @Override
    public InputStream stream(ForwardCodec.Batch batch) {
      return new EncodedMessage(ForwardCodec.encode(batch));
    }

    @Override
    public ForwardCodec.Batch parse(InputStream stream) {
      try {
        return ForwardCodec.decodeBatch(MessageBytes.readAll(stream));
      } catch (IOException e) {
        throw MessageBytes.unparseable(e);
      }
    }
  }

  /** Writes and reads a {@code ForwardAnswers}. */
  private static final class AnswersMarshaller
      implements MethodDescriptor.Marshaller<ForwardCodec.Answers> {

    @Override
    public InputStream stream(ForwardCodec.Answers answers) {
      return new EncodedMessage(ForwardCodec.encode(answers));
    }

    @Override
    public ForwardCodec.Answers parse(InputStream stream) {
      try {
        return ForwardCodec.decodeAnswers(MessageBytes.readAll(stream));
      } catch (IOException e) {
        throw MessageBytes.unparseable(e);
      }
    }
  }
}
