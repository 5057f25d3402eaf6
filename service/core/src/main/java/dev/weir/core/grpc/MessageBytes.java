package dev.weir.core.grpc;

import io.grpc.KnownLength;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;

/** The bytes of a message the transport hands a marshaller, read in one piece. */
public final class MessageBytes {

  private MessageBytes() {}

  /**
   * Returns the failure grpc-java's own protobuf marshallers report for a message they cannot read,
   * for a marshaller of its own to report the same.
   */
  public static StatusRuntimeException unparseable(IOException e) {
    return Status.INTERNAL
        .withDescription("Invalid protobuf byte sequence")
        .withCause(e)
        .asRuntimeException();
  }

  /** Returns every byte left in {@code stream}, sized once when the transport knows the length. */
  public static byte[] readAll(InputStream stream) throws IOException {
    if (!(stream instanceof KnownLength)) {
      return stream.readAllBytes();
    }
    byte[] bytes = new byte[stream.available()];
    int read = 0;
    while (read < bytes.length) {
      int n = stream.read(bytes, read, bytes.length - read);
      if (n < 0) {
        return Arrays.copyOf(bytes, read);
      }
      read += n;
    }
    int next = stream.read();
    if (next < 0) {
      return bytes;
    }
    ByteArrayOutputStream all = new ByteArrayOutputStream(bytes.length + 1);
    all.write(bytes);
    all.write(next);
    stream.transferTo(all);
    return all.toByteArray();
  }
}
