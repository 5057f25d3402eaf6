package dev.weir.server;

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
import java.time.Duration;
import java.util.function.BooleanSupplier;

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

  /** How many connections a warm-up opens when its budget allows. */
  static final int CONNECTIONS = 600;

  /** The complete calls each connection makes. */
  static final int CALLS_PER_CONNECTION = 16;

  private static final String PATH = "/" + GrpcServerMetrics.WARM_UP_METHOD;
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

  /**
   * Warms up the listener at {@code target} with up to {@value #CONNECTIONS} connections, stopping
   * once {@code budget} has passed on {@code clock} (no read waits past it) or a connection fails;
   * a budget of zero opens none. The calls carry {@code token} in {@link
   * GrpcServerMetrics#WARM_UP_HEADER}.
   */
  static Result run(InetSocketAddress target, Duration budget, Clock clock, String token) {
    return run(target, budget, clock, token, () -> false);
  }

  /**
   * Warms up the listener at {@code target} as {@link #run(InetSocketAddress, Duration, Clock,
   * String)} does, stopping also once {@code stopping} says the process was told to stop.
   */
  static Result run(
      InetSocketAddress target,
      Duration budget,
      Clock clock,
      String token,
      BooleanSupplier stopping) {
    return new TransportWarmUp(target, clock, token).run(budget, stopping);
  }

  private Result run(Duration budget, BooleanSupplier stopping) {
    long start = clock.monotonicNanos();
    WarmUpDeadline deadline = WarmUpDeadline.after(clock, budget.toNanos(), stopping);
    int connections = 0;
    int answered = 0;
    String failure = null;
    while (connections < CONNECTIONS && deadline.before()) {
      try {
        answered += connect(connections % 2 == 0, deadline);
        connections++;
      } catch (IOException e) {
        if (deadline.before()) {
          failure = e.toString();
        }
        break;
      }
    }
    return new Result(
        connections, answered, Duration.ofNanos(clock.monotonicNanos() - start), failure);
  }

  /**
   * Opens one connection, writes its calls and either reads every answer before closing ({@code
   * answer}) or closes at once; returns the calls answered.
   */
  private int connect(boolean answer, WarmUpDeadline deadline) throws IOException {
    try (Socket socket = new Socket()) {
      socket.setTcpNoDelay(true);
      socket.connect(target, deadline.socketTimeoutMillis());
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
  private int readAnswers(Socket socket, OutputStream out, WarmUpDeadline deadline)
      throws IOException {
    DataInputStream in = new DataInputStream(socket.getInputStream());
    int ended = 0;
    while (ended < CALLS_PER_CONNECTION && deadline.before()) {
      socket.setSoTimeout(deadline.socketTimeoutMillis());
      if (WarmUpFrames.read(in, out).endsStream()) {
        ended++;
      }
    }
    return ended;
  }

  /**
   * Returns what a connection writes first: the preface, empty settings, {@value
   * #CALLS_PER_CONNECTION} complete calls and the headers of one more.
   */
  private static byte[] opening(String authority, String token) {
    byte[] headers = WarmUpFrames.headerBlock(PATH, authority, token);
    byte[] emptyMessage = new byte[5];
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    bytes.writeBytes(WarmUpFrames.PREFACE);
    bytes.writeBytes(WarmUpFrames.frame(WarmUpFrames.SETTINGS, 0, 0, new byte[0]));
    int stream = 1;
    for (int call = 0; call < CALLS_PER_CONNECTION; call++, stream += 2) {
      bytes.writeBytes(
          WarmUpFrames.frame(WarmUpFrames.HEADERS, WarmUpFrames.END_HEADERS, stream, headers));
      bytes.writeBytes(
          WarmUpFrames.frame(WarmUpFrames.DATA, WarmUpFrames.END_STREAM, stream, emptyMessage));
    }
    bytes.writeBytes(
        WarmUpFrames.frame(WarmUpFrames.HEADERS, WarmUpFrames.END_HEADERS, stream, headers));
    return bytes.toByteArray();
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
