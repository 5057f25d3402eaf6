package dev.weir.core.grpc;

import io.grpc.Drainable;
import io.grpc.KnownLength;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Objects;

/**
 * An already serialized gRPC message as a marshaller hands it to the transport: its length is
 * known and it drains into the transport's buffer in one write, so grpc-java neither measures it
 * again nor copies it through a temporary buffer.
 */
public final class EncodedMessage extends InputStream implements KnownLength, Drainable {

  private final byte[] bytes;
  private int position;

  /** Wraps {@code bytes}, which the stream then owns. */
  public EncodedMessage(byte[] bytes) {
    this.bytes = Objects.requireNonNull(bytes, "bytes");
  }

  @Override
  public int drainTo(OutputStream target) throws IOException {
    int length = bytes.length - position;
    target.write(bytes, position, length);
    position = bytes.length;
    return length;
  }

  @Override
  public int read() {
    return position < bytes.length ? bytes[position++] & 0xFF : -1;
  }

  @Override
  public int read(byte[] target, int offset, int length) {
    Objects.checkFromIndexSize(offset, length, target.length);
    if (length == 0) {
      return 0;
    }
    if (position == bytes.length) {
      return -1;
    }
    int n = Math.min(length, bytes.length - position);
    System.arraycopy(bytes, position, target, offset, n);
    position += n;
    return n;
  }

  @Override
  public int available() {
    return bytes.length - position;
  }
}
