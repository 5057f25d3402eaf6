package dev.weir.core.grpc;

import io.grpc.MethodDescriptor;
import java.io.IOException;
import java.io.InputStream;
import java.util.Objects;
import java.util.function.Function;

/**
 * A gRPC marshaller over a codec of whole messages: it hands the transport the bytes {@code encode}
 * writes ({@link EncodedMessage}) and reads a message by giving {@code decode} all of its bytes
 * ({@link MessageBytes#readAll}); a message {@code decode} cannot read fails as grpc-java's own
 * protobuf marshallers fail ({@link MessageBytes#unparseable}).
 *
 * @param <T> the message type the codec reads and writes
 */
public final class BytesMarshaller<T> implements MethodDescriptor.Marshaller<T> {

  /** Reads one message from all of its bytes. */
  @FunctionalInterface
  public interface Decoder<T> {
    /** Returns the message in {@code bytes}; throws when they are not one. */
    T decode(byte[] bytes) throws IOException;
  }

  private final Function<T, byte[]> encode;
  private final Decoder<T> decode;

  /** Creates the marshaller of {@code encode} and {@code decode}. */
  public BytesMarshaller(Function<T, byte[]> encode, Decoder<T> decode) {
    this.encode = Objects.requireNonNull(encode, "encode");
    this.decode = Objects.requireNonNull(decode, "decode");
  }

  @Override
  public InputStream stream(T message) {
    return new EncodedMessage(encode.apply(message));
  }

  @Override
  public T parse(InputStream stream) {
    try {
      return decode.decode(MessageBytes.readAll(stream));
    } catch (IOException e) {
      throw MessageBytes.unparseable(e);
    }
  }
}
