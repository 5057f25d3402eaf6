package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The client gRPC port bounds what one HTTP/2 connection can make the node hold: the calls open
 * at once, and the streams reset in a loop ("rapid reset"), read at the frame level as a hostile
 * client sees them.
 */
class ClientGrpcStreamLimitsTest {

  private static final int SETTINGS = 0x4;
  private static final int HEADERS = 0x1;
  private static final int RST_STREAM = 0x3;
  private static final int GOAWAY = 0x7;
  private static final int SETTINGS_MAX_CONCURRENT_STREAMS = 0x3;
  private static final int ENHANCE_YOUR_CALM = 0xb;
  private static final int REFUSED_STREAM = 0x7;

  private final FakeClock clock = new FakeClock();
  private WeirNode node;

  @BeforeEach
  void start() throws Exception {
    node =
        WeirNode.builder(TestConfigs.loopback())
            .clock(clock)
            .store(new InMemoryBucketStore(clock))
            .start();
  }

  @AfterEach
  void stop() throws Exception {
    node.close();
  }

  @Test
  void settings_advertiseTheConcurrentCallsBound() throws IOException {
    try (Socket socket = connect()) {
      Map<Integer, Long> settings = readSettings(new DataInputStream(socket.getInputStream()));

      assertThat(settings)
          .containsEntry(
              SETTINGS_MAX_CONCURRENT_STREAMS,
              (long) ClientGrpcListener.MAX_CALLS_PER_CONNECTION);
    }
  }

  @Test
  void callBeyondTheBound_refusedAlone() throws IOException {
    int bound = ClientGrpcListener.MAX_CALLS_PER_CONNECTION;
    try (Socket socket = connect()) {
      DataInputStream in = new DataInputStream(socket.getInputStream());
      readSettings(in);
      OutputStream out = socket.getOutputStream();
      frame(out, SETTINGS, 0x1, 0, new byte[0]);
      ByteArrayOutputStream calls = new ByteArrayOutputStream();
      byte[] headers = requestHeaders();
      for (int i = 0; i <= bound; i++) {
        frame(calls, HEADERS, 0x4, 2 * i + 1, headers);
      }
      out.write(calls.toByteArray());
      out.flush();

      Frame reset = readUntil(in, RST_STREAM);

      assertThat(reset.stream()).as("the call after the bound").isEqualTo(2 * bound + 1);
      assertThat(ByteBuffer.wrap(reset.payload()).getInt()).isEqualTo(REFUSED_STREAM);
    }
  }

  @Test
  void rapidReset_connectionClosedWithEnhanceYourCalm_nodeKeepsAnswering() throws Exception {
    int goAwayCode;
    try (Socket socket = connect()) {
      DataInputStream in = new DataInputStream(socket.getInputStream());
      readSettings(in);
      OutputStream out = socket.getOutputStream();
      frame(out, SETTINGS, 0x1, 0, new byte[0]);
      byte[] headers = requestHeaders();
      byte[] cancel = ByteBuffer.allocate(4).putInt(0x8).array();
      ByteArrayOutputStream burst = new ByteArrayOutputStream();
      for (int i = 0; i <= dev.weir.core.grpc.StreamResets.MAX_PER_WINDOW; i++) {
        int stream = 2 * i + 1;
        frame(burst, HEADERS, 0x4, stream, headers);
        frame(burst, RST_STREAM, 0, stream, cancel);
      }
      Thread writer =
          new Thread(
              () -> {
                try {
                  out.write(burst.toByteArray());
                  out.flush();
                } catch (IOException closedByTheServer) {
                  // The server may close the connection before the burst is all written.
                }
              });
      writer.start();
      goAwayCode = readUntilGoAway(in);
      writer.join(10_000);
    }

    assertThat(goAwayCode).isEqualTo(ENHANCE_YOUR_CALM);
    assertThat(remainingAfterOneHit()).isEqualTo(4);
  }

  private long remainingAfterOneHit() throws InterruptedException {
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort()).usePlaintext().build();
    try {
      return V1Grpc.newBlockingStub(channel)
          .withDeadlineAfter(10, TimeUnit.SECONDS)
          .getRateLimits(TestRequests.oneHit(5))
          .getResponses(0)
          .getRemaining();
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  private Socket connect() throws IOException {
    Socket socket = new Socket("127.0.0.1", node.grpcPort());
    socket.setSoTimeout(30_000);
    OutputStream out = socket.getOutputStream();
    out.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
    frame(out, SETTINGS, 0, 0, new byte[0]);
    out.flush();
    return socket;
  }

  /** Reads frames up to the server's first SETTINGS frame and returns its parameters. */
  private static Map<Integer, Long> readSettings(DataInputStream in) throws IOException {
    while (true) {
      Frame f = Frame.read(in);
      if (f.type == SETTINGS && (f.flags & 0x1) == 0) {
        Map<Integer, Long> out = new HashMap<>();
        ByteBuffer b = ByteBuffer.wrap(f.payload);
        while (b.remaining() >= 6) {
          out.put(b.getShort() & 0xFFFF, b.getInt() & 0xFFFF_FFFFL);
        }
        return out;
      }
    }
  }

  /** Reads frames until a GOAWAY and returns its error code. */
  private static int readUntilGoAway(DataInputStream in) throws IOException {
    return ByteBuffer.wrap(readUntil(in, GOAWAY).payload, 4, 4).getInt();
  }

  /** Reads frames until one of {@code type} and returns it. */
  private static Frame readUntil(DataInputStream in, int type) throws IOException {
    while (true) {
      Frame f = Frame.read(in);
      if (f.type == type) {
        return f;
      }
    }
  }

  /** The HPACK block of a gRPC call's headers, each a literal without indexing or Huffman. */
  private static byte[] requestHeaders() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    String[][] headers = {
      {":method", "POST"},
      {":scheme", "http"},
      {":path", "/pb.gubernator.V1/GetRateLimits"},
      {":authority", "localhost"},
      {"content-type", "application/grpc"},
      {"te", "trailers"}
    };
    for (String[] h : headers) {
      out.write(0x00);
      for (String s : h) {
        byte[] bytes = s.getBytes(StandardCharsets.US_ASCII);
        out.write(bytes.length);
        out.writeBytes(bytes);
      }
    }
    return out.toByteArray();
  }

  private static void frame(OutputStream out, int type, int flags, int stream, byte[] payload)
      throws IOException {
    ByteBuffer header = ByteBuffer.allocate(9);
    header.put((byte) (payload.length >>> 16));
    header.put((byte) (payload.length >>> 8));
    header.put((byte) payload.length);
    header.put((byte) type);
    header.put((byte) flags);
    header.putInt(stream);
    out.write(header.array());
    out.write(payload);
  }

  /** One HTTP/2 frame as read from the wire. */
  private record Frame(int type, int flags, int stream, byte[] payload) {
    static Frame read(DataInputStream in) throws IOException {
      int length =
          (in.readUnsignedByte() << 16) | (in.readUnsignedByte() << 8) | in.readUnsignedByte();
      int type = in.readUnsignedByte();
      int flags = in.readUnsignedByte();
      int stream = in.readInt() & 0x7FFF_FFFF;
      byte[] payload = new byte[length];
      in.readFully(payload);
      return new Frame(type, flags, stream, payload);
    }
  }
}
