package dev.weir.server;

import dev.weir.core.metrics.GrpcServerMetrics;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * The HTTP/2 frames (RFC 9113) the start-up warm-ups ({@link TransportWarmUp}, {@link
 * DecisionWarmUp}) write to and read from the node's own gRPC listeners over blocking sockets:
 * frames, gRPC messages, the transport warm-up's header block, and a reader that acknowledges the
 * server's settings and pings.
 */
final class WarmUpFrames {

  static final int DATA = 0x0;
  static final int HEADERS = 0x1;
  static final int RST_STREAM = 0x3;
  static final int SETTINGS = 0x4;
  static final int PING = 0x6;
  static final int GOAWAY = 0x7;
  static final int WINDOW_UPDATE = 0x8;
  static final int END_STREAM = 0x1;
  static final int ACK = 0x1;
  static final int END_HEADERS = 0x4;

  /** The connection preface every client connection starts with. */
  static final byte[] PREFACE =
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

  /** The largest flow-control window HTTP/2 allows. */
  static final int MAX_WINDOW = Integer.MAX_VALUE;

  /** The default initial flow-control window of a connection. */
  static final int DEFAULT_WINDOW = 65_535;

  private WarmUpFrames() {}

  /**
   * One frame read from the server.
   *
   * @param type the frame type
   * @param flags the frame flags
   * @param payload the frame payload
   */
  record Frame(int type, int flags, byte[] payload) {

    /** Returns whether the frame ends its stream: END_STREAM on headers or data, or a reset. */
    boolean endsStream() {
      return (type == HEADERS || type == DATA) && (flags & END_STREAM) != 0 || type == RST_STREAM;
    }
  }

  /**
   * Reads the next frame from {@code in}, answering the server's settings and pings on {@code
   * out}.
   *
   * @throws IOException when the connection fails or closes mid-frame, or the server sends GOAWAY
   */
  static Frame read(DataInputStream in, OutputStream out) throws IOException {
    int length = in.readUnsignedShort() << 8 | in.readUnsignedByte();
    int type = in.readUnsignedByte();
    int flags = in.readUnsignedByte();
    in.readInt(); // the stream identifier
    byte[] payload = in.readNBytes(length);
    if (payload.length < length) {
      throw new IOException("the server closed the connection mid-frame");
    }
    if (type == SETTINGS && (flags & ACK) == 0) {
      out.write(frame(SETTINGS, ACK, 0, new byte[0]));
      out.flush();
    } else if (type == PING && (flags & ACK) == 0) {
      out.write(frame(PING, ACK, 0, payload));
      out.flush();
    } else if (type == GOAWAY) {
      throw new IOException("the server sent GOAWAY");
    }
    return new Frame(type, flags, payload);
  }

  /**
   * Returns the HPACK block (RFC 7541) of a gRPC call to {@code path} at {@code authority}:
   * static-table entries and literals without indexing, so that every stream can repeat it, with
   * {@link GrpcServerMetrics#WARM_UP_HEADER} set to {@code token}.
   */
  static byte[] headerBlock(String path, String authority, String token) {
    ByteArrayOutputStream block = new ByteArrayOutputStream();
    block.write(0x83); // :method: POST
    block.write(0x86); // :scheme: http
    literal(block, 4, path); // :path
    literal(block, 1, authority); // :authority
    block.write(0x0f); // content-type (static index 31: 15 + 16)
    block.write(16);
    string(block, "application/grpc");
    block.write(0x00); // te, a new name
    string(block, "te");
    string(block, "trailers");
    block.write(0x00); // the header that keeps the call out of the metrics, a new name
    string(block, GrpcServerMetrics.WARM_UP_HEADER.name());
    string(block, token);
    return block.toByteArray();
  }

  /** Returns {@code message} as one gRPC message: uncompressed, its length first. */
  static byte[] grpcMessage(byte[] message) {
    byte[] framed = new byte[5 + message.length];
    framed[1] = (byte) (message.length >>> 24);
    framed[2] = (byte) (message.length >>> 16);
    framed[3] = (byte) (message.length >>> 8);
    framed[4] = (byte) message.length;
    System.arraycopy(message, 0, framed, 5, message.length);
    return framed;
  }

  /** Returns a WINDOW_UPDATE frame for the connection that adds {@code increment} to its window. */
  static byte[] connectionWindowUpdate(int increment) {
    byte[] payload = new byte[4];
    putInt(payload, 0, increment & Integer.MAX_VALUE);
    return frame(WINDOW_UPDATE, 0, 0, payload);
  }

  /** Writes a literal header field without indexing whose name is static entry {@code index}. */
  private static void literal(ByteArrayOutputStream block, int index, String value) {
    block.write(index);
    string(block, value);
  }

  /** Writes {@code value} as an HPACK string literal without Huffman coding (under 127 bytes). */
  private static void string(ByteArrayOutputStream block, String value) {
    byte[] bytes = value.getBytes(StandardCharsets.US_ASCII);
    if (bytes.length >= 127) {
      throw new IllegalArgumentException("a warm-up header value of " + bytes.length + " bytes");
    }
    block.write(bytes.length);
    block.writeBytes(bytes);
  }

  /** Returns an HTTP/2 frame of {@code type} with {@code flags} on {@code stream}. */
  static byte[] frame(int type, int flags, int stream, byte[] payload) {
    byte[] frame = new byte[9 + payload.length];
    frame[0] = (byte) (payload.length >>> 16);
    frame[1] = (byte) (payload.length >>> 8);
    frame[2] = (byte) payload.length;
    frame[3] = (byte) type;
    frame[4] = (byte) flags;
    putInt(frame, 5, stream);
    System.arraycopy(payload, 0, frame, 9, payload.length);
    return frame;
  }

  /** Writes {@code value} big-endian at {@code offset} of {@code bytes}. */
  private static void putInt(byte[] bytes, int offset, int value) {
    bytes[offset] = (byte) (value >>> 24);
    bytes[offset + 1] = (byte) (value >>> 16);
    bytes[offset + 2] = (byte) (value >>> 8);
    bytes[offset + 3] = (byte) value;
  }
}
