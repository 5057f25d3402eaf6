package dev.weir.server;

import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import dev.weir.core.metrics.GrpcServerMetrics;
import dev.weir.core.time.Clock;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The start-up warm-up of the client gRPC listener's transport: short plaintext HTTP/2 connections
 * from the node to its own gRPC port, each making {@value #CALLS_PER_CONNECTION} calls to {@link
 * GrpcServerMetrics#WARM_UP_METHOD} and leaving one more call open, every other one closed with its
 * calls still in flight. The calls carry {@link GrpcServerMetrics#WARM_UP_HEADER}, so the node's
 * metrics do not count them.
 *
 * <p>The JIT compiles the transport's read, write and close code from the types and branches it
 * has seen. A node whose first traffic is a few long-lived connections compiles that code without
 * the accept path's types or the close path's branches, and the next new connection or abrupt
 * close throws the compiled code away; on one core the recompilation then holds up calls for
 * seconds ({@code docs/benchmarks.md}, "The first round after the warm-up"). These connections put
 * those types and branches in the profiles before traffic arrives.
 *
 * <p>No service serves the method, so each call is answered {@code UNIMPLEMENTED} before any
 * handler runs: a served method, even a health check, would add its handler's, listener's and
 * marshaller's types to the profiles of the call path that every real call takes.
 *
 * <p>The client writes fixed HTTP/2 frames (RFC 9113) on a blocking socket rather than using a
 * Netty or gRPC client: the server's transport code is shared by every channel in the JVM, and a
 * client built on it would add its own types to the very profiles being warmed.
 */
final class TransportWarmUp {

  /** {@code WEIR_WARMUP}: the most a starting node spends warming up, {@code 0s} for none. */
  static final EnvVar WARMUP = EnvVar.of("WEIR_WARMUP");

  /** The warm-up budget when {@code WEIR_WARMUP} is not set. */
  static final Duration DEFAULT_BUDGET = Duration.ofSeconds(5);

  /** The largest budget {@code WEIR_WARMUP} accepts. */
  static final Duration MAX_BUDGET = Duration.ofMinutes(1);

  /** How many connections a warm-up opens when its budget allows. */
  static final int CONNECTIONS = 600;

  /** The complete calls each connection makes. */
  static final int CALLS_PER_CONNECTION = 16;

  /** How long one connection may take to connect or to answer before the warm-up gives up. */
  static final int SOCKET_TIMEOUT_MILLIS = 2_000;

  private static final byte[] PREFACE =
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
  private static final String PATH = "/" + GrpcServerMetrics.WARM_UP_METHOD;
  private static final int DATA = 0x0;
  private static final int HEADERS = 0x1;
  private static final int RST_STREAM = 0x3;
  private static final int SETTINGS = 0x4;
  private static final int PING = 0x6;
  private static final int GOAWAY = 0x7;
  private static final int END_STREAM = 0x1;
  private static final int ACK = 0x1;
  private static final int END_HEADERS = 0x4;
  private static final InetAddress IPV6_LOOPBACK = ipv6Loopback();

  /**
   * What a warm-up did.
   *
   * @param connections the connections opened
   * @param answered the calls whose answers the warm-up read to the end
   * @param elapsed how long it took
   * @param failure why it stopped early, or null
   */
  record Result(int connections, int answered, Duration elapsed, String failure) {}

  private final InetSocketAddress target;
  private final Clock clock;
  private final byte[] opening;

  private TransportWarmUp(InetSocketAddress target, Clock clock, String token) {
    this.target = target;
    this.clock = clock;
    this.opening = opening("localhost:" + target.getPort(), token);
  }

  /** Returns {@code WEIR_WARMUP} from {@code env}: between 0 and one minute, 5 s by default. */
  static Duration budget(EnvReader env) {
    return env.duration(WARMUP, DEFAULT_BUDGET, Duration.ZERO, MAX_BUDGET);
  }

  /**
   * Warms up the listener at {@code target} with up to {@value #CONNECTIONS} connections, stopping
   * once {@code budget} has passed on {@code clock} (no read waits past it) or a connection fails;
   * a budget of zero opens none. The calls carry {@code token} in {@link
   * GrpcServerMetrics#WARM_UP_HEADER}.
   */
  static Result run(InetSocketAddress target, Duration budget, Clock clock, String token) {
    return new TransportWarmUp(target, clock, token).run(budget);
  }

  private Result run(Duration budget) {
    long start = clock.monotonicNanos();
    long deadline = start + budget.toNanos();
    int connections = 0;
    int answered = 0;
    String failure = null;
    while (connections < CONNECTIONS && before(deadline)) {
      try {
        answered += connect(connections % 2 == 0, deadline);
        connections++;
      } catch (IOException e) {
        if (before(deadline)) {
          failure = e.toString();
        }
        break;
      }
    }
    return new Result(
        connections, answered, Duration.ofNanos(clock.monotonicNanos() - start), failure);
  }

  /** Returns whether {@code deadline} is still ahead on the clock. */
  private boolean before(long deadline) {
    return clock.monotonicNanos() - deadline < 0;
  }

  /** Returns how long one connect or read may wait: the time left, at most 2 s, at least 1 ms. */
  private int timeoutMillis(long deadline) {
    long left = TimeUnit.NANOSECONDS.toMillis(deadline - clock.monotonicNanos());
    return (int) Math.max(1, Math.min(SOCKET_TIMEOUT_MILLIS, left));
  }

  /**
   * Opens one connection, writes its calls and either reads every answer before closing ({@code
   * answer}) or closes at once; returns the calls answered.
   */
  private int connect(boolean answer, long deadline) throws IOException {
    try (Socket socket = new Socket()) {
      socket.setTcpNoDelay(true);
      socket.connect(target, timeoutMillis(deadline));
      OutputStream out = socket.getOutputStream();
      out.write(opening);
      out.flush();
      return answer ? readAnswers(socket, out, deadline) : 0;
    }
  }

  /**
   * Reads frames until every complete call has ended or {@code deadline} has passed,
   * acknowledging the server's settings and pings; returns the calls that ended.
   */
  private int readAnswers(Socket socket, OutputStream out, long deadline) throws IOException {
    DataInputStream in = new DataInputStream(socket.getInputStream());
    int ended = 0;
    while (ended < CALLS_PER_CONNECTION && before(deadline)) {
      socket.setSoTimeout(timeoutMillis(deadline));
      int length = in.readUnsignedShort() << 8 | in.readUnsignedByte();
      int type = in.readUnsignedByte();
      int flags = in.readUnsignedByte();
      in.readInt();
      byte[] payload = in.readNBytes(length);
      if (payload.length < length) {
        throw new IOException("the server closed the connection mid-frame");
      }
      if ((type == HEADERS || type == DATA) && (flags & END_STREAM) != 0 || type == RST_STREAM) {
        ended++;
      } else if (type == SETTINGS && (flags & ACK) == 0) {
        out.write(frame(SETTINGS, ACK, 0, new byte[0]));
        out.flush();
      } else if (type == PING && (flags & ACK) == 0) {
        out.write(frame(PING, ACK, 0, payload));
        out.flush();
      } else if (type == GOAWAY) {
        throw new IOException("the server sent GOAWAY");
      }
    }
    return ended;
  }

  /**
   * Returns what a connection writes first: the preface, empty settings, {@value
   * #CALLS_PER_CONNECTION} complete calls and the headers of one more.
   */
  private static byte[] opening(String authority, String token) {
    byte[] headers = headerBlock(authority, token);
    byte[] emptyMessage = new byte[5];
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    bytes.writeBytes(PREFACE);
    bytes.writeBytes(frame(SETTINGS, 0, 0, new byte[0]));
    int stream = 1;
    for (int call = 0; call < CALLS_PER_CONNECTION; call++, stream += 2) {
      bytes.writeBytes(frame(HEADERS, END_HEADERS, stream, headers));
      bytes.writeBytes(frame(DATA, END_STREAM, stream, emptyMessage));
    }
    bytes.writeBytes(frame(HEADERS, END_HEADERS, stream, headers));
    return bytes.toByteArray();
  }

  /**
   * Returns the HPACK block (RFC 7541) of a gRPC call to {@link #PATH}: static-table entries and
   * literals without indexing, so that every stream can repeat it.
   */
  private static byte[] headerBlock(String authority, String token) {
    ByteArrayOutputStream block = new ByteArrayOutputStream();
    block.write(0x83); // :method: POST
    block.write(0x86); // :scheme: http
    literal(block, 4, PATH); // :path
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
  private static byte[] frame(int type, int flags, int stream, byte[] payload) {
    ByteArrayOutputStream frame = new ByteArrayOutputStream(9 + payload.length);
    frame.write(payload.length >>> 16);
    frame.write(payload.length >>> 8);
    frame.write(payload.length);
    frame.write(type);
    frame.write(flags);
    frame.write(stream >>> 24);
    frame.write(stream >>> 16);
    frame.write(stream >>> 8);
    frame.write(stream);
    frame.writeBytes(payload);
    return frame.toByteArray();
  }

  /**
   * Returns the address that reaches a listener bound to {@code bound} from this host: the
   * loopback address of the wildcard's family for a wildcard, else {@code bound} itself.
   */
  static InetSocketAddress reachable(InetSocketAddress bound) {
    InetAddress address = bound.getAddress();
    if (address == null || !address.isAnyLocalAddress()) {
      return bound;
    }
    InetAddress loopback =
        address instanceof Inet6Address ? IPV6_LOOPBACK : InetAddress.getLoopbackAddress();
    return new InetSocketAddress(loopback, bound.getPort());
  }

  private static InetAddress ipv6Loopback() {
    byte[] one = new byte[16];
    one[15] = 1;
    try {
      return InetAddress.getByAddress("localhost", one);
    } catch (UnknownHostException e) {
      throw new IllegalStateException("16 bytes are an IPv6 address", e);
    }
  }
}
