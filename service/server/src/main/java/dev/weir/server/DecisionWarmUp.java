package dev.weir.server;

import dev.weir.core.time.Clock;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersEncoder;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersEncoder;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * The start-up warm-up of the decision path: calls of one rate-limit method over {@value
 * #CONNECTIONS_AT_ONCE} plaintext HTTP/2 connections at once, {@value #IN_FLIGHT} calls in flight
 * on each, from the node to a listener of its own that answers them from counters and meters of
 * its own ({@link WarmUpServer}), until the JIT compiler has settled or the budget is spent.
 *
 * <p>The JIT compiles the decision path from the calls it has seen, and a node given its full
 * traffic the moment it is ready compiles that path while answering: on one core, it answered its
 * first half second at about a seventieth of its warm rate and its first ten seconds at an eighth
 * ({@code docs/benchmarks.md}, "A fresh node under full load"). The calls here are real ones, made
 * the way a proxy makes them, so that the code compiled is the code the node's traffic runs and
 * that traffic finds few branches the compiled code left out: the same handler, marshaller,
 * listener, engine, store and meter classes as the node's own; headers in HPACK with Huffman codes
 * and the dynamic table, every other connection's calls with a {@code grpc-timeout}; requests that
 * both find their buckets and add new ones to a full store; and, every {@value
 * #CALLS_PER_CONNECTION} calls, a connection replaced, every other time closed with a call in
 * flight whose request has not ended (a response written to a closed stream would be logged as a
 * stream error).
 *
 * <p>Like {@link TransportWarmUp}, the client runs no code of the server's transport: it writes
 * frames on blocking sockets, one thread writing a batch to every connection and then reading
 * every batch's answers, and encodes headers with the unshaded Netty, which the gRPC listener's
 * shaded copy does not share.
 */
final class DecisionWarmUp {

  /** The connections open at once. */
  static final int CONNECTIONS_AT_ONCE = 4;

  /** The calls in flight on a connection. */
  static final int IN_FLIGHT = 16;

  /** The calls one connection makes before it is replaced. */
  static final int CALLS_PER_CONNECTION = 4096;

  /** The fewest calls answered before the warm-up may end on a settled JIT. */
  static final long MIN_CALLS = 20_000;

  /** The most calls a warm-up makes, whatever its budget and clock say. */
  static final long MAX_CALLS = 5_000_000;

  /**
   * The largest message the warm-up sends: {@value #IN_FLIGHT} of them fit the flow-control window
   * a connection starts with (65 535 bytes), and one fits a frame of the smallest size HTTP/2
   * allows, so no call waits for the server's settings or window updates.
   */
  static final int MAX_MESSAGE_BYTES = 3_000;

  /** How long the JIT must have been quiet for the warm-up to end. */
  static final Duration QUIET = Duration.ofSeconds(1);

  /** The most compilation time, in milliseconds, a quiet {@link #QUIET} period may hold. */
  static final long QUIET_COMPILE_MILLIS = 50;

  /** The {@code grpc-timeout} of every other connection's calls. */
  static final String TIMEOUT = "1S";

  /** The bytes read from a connection at once. */
  private static final int READ_BUFFER = 64 * 1024;

  /**
   * What a decision warm-up did.
   *
   * @param calls the calls written
   * @param answered the calls answered with a message
   * @param connections the connections opened
   * @param elapsed how long it took
   * @param settled whether it ended because the JIT had settled (else its budget ended it, or a
   *     failure)
   * @param failure why it stopped early, or null
   */
  record Result(
      long calls,
      long answered,
      int connections,
      Duration elapsed,
      boolean settled,
      String failure) {}

  private final InetSocketAddress target;
  private final HeaderBlocks plain;
  private final HeaderBlocks timed;
  private final Clock clock;
  private final LongSupplier compileMillis;
  private final List<byte[]> messages;
  private WarmUpDeadline deadline;
  private int lastTimeoutMillis;
  private long calls;
  private long answered;
  private int connections;
  private int next;
  private long quietSince;
  private long quietCompileMillis;
  private boolean settled;

  private DecisionWarmUp(
      InetSocketAddress target,
      String path,
      List<byte[]> messages,
      Clock clock,
      LongSupplier compileMillis)
      throws Http2Exception {
    this.target = target;
    this.plain = HeaderBlocks.of(path, "localhost:" + target.getPort(), null);
    this.timed = HeaderBlocks.of(path, "localhost:" + target.getPort(), TIMEOUT);
    this.clock = clock;
    this.compileMillis = compileMillis;
    this.messages = messages.stream().map(WarmUpFrames::grpcMessage).toList();
  }

  /**
   * Calls {@code path} at {@code target} with {@code messages} in turn until {@code budget} has
   * passed on {@code clock} (no read waits past it), a connection fails, or, once {@value
   * #MIN_CALLS} calls were answered, {@code compileMillis} (the JIT's total compilation time) has
   * grown by at most {@value #QUIET_COMPILE_MILLIS} ms over {@link #QUIET}, and after {@value
   * #MAX_CALLS} calls at the most.
   *
   * @throws IllegalArgumentException when {@code messages} is empty or holds one longer than
   *     {@value #MAX_MESSAGE_BYTES} bytes
   */
  static Result run(
      InetSocketAddress target,
      String path,
      List<byte[]> messages,
      Duration budget,
      Clock clock,
      LongSupplier compileMillis) {
    return run(target, path, messages, budget, clock, compileMillis, () -> false);
  }

  /**
   * Calls {@code path} as {@link #run(InetSocketAddress, String, List, Duration, Clock,
   * LongSupplier)} does, stopping also once {@code stopping} says the process was told to stop.
   */
  static Result run(
      InetSocketAddress target,
      String path,
      List<byte[]> messages,
      Duration budget,
      Clock clock,
      LongSupplier compileMillis,
      BooleanSupplier stopping) {
    if (messages.isEmpty()) {
      throw new IllegalArgumentException("a decision warm-up needs at least one message");
    }
    for (byte[] message : messages) {
      if (message.length > MAX_MESSAGE_BYTES) {
        throw new IllegalArgumentException(
            "a warm-up message of "
                + message.length
                + " bytes; at most "
                + MAX_MESSAGE_BYTES
                + " are sent");
      }
    }
    try {
      return new DecisionWarmUp(target, path, messages, clock, compileMillis).run(budget, stopping);
    } catch (Http2Exception e) {
      throw new IllegalArgumentException("cannot encode the headers of a call to " + path, e);
    }
  }

  private Result run(Duration budget, BooleanSupplier stopping) {
    long start = clock.monotonicNanos();
    deadline = WarmUpDeadline.after(clock, budget.toNanos(), stopping);
    quietSince = start;
    quietCompileMillis = compileMillis.getAsLong();
    String failure = null;
    List<Connection> open = new ArrayList<>();
    try {
      while (deadline.before() && calls < MAX_CALLS && !settled()) {
        round(open);
        if (answered == 0 && deadline.before()) {
          failure = "no call was answered with a message";
          break;
        }
      }
    } catch (SocketTimeoutException e) {
      if (deadline.before() && lastTimeoutMillis == WarmUpDeadline.SOCKET_TIMEOUT_MILLIS) {
        failure = e.toString();
      }
    } catch (IOException e) {
      if (deadline.before()) {
        failure = e.toString();
      }
    } finally {
      open.forEach(Connection::close);
    }
    return new Result(
        calls,
        answered,
        connections,
        Duration.ofNanos(clock.monotonicNanos() - start),
        settled,
        failure);
  }

  /**
   * Makes one round of calls: opens connections up to {@value #CONNECTIONS_AT_ONCE}, writes a
   * batch to each, then reads each batch's answers, ending the connections whose last batch that
   * was. A method of its own so that the JIT compiles it after a few calls, not only after the
   * many back edges of the loop that calls it.
   */
  private void round(List<Connection> open) throws IOException {
    while (open.size() < CONNECTIONS_AT_ONCE) {
      open.add(new Connection(connections % 2 == 1));
      connections++;
    }
    for (Connection connection : open) {
      connection.writeBatch();
    }
    for (Connection connection : open) {
      connection.readAnswers();
      if (connection.isLastBatch()) {
        connection.end();
      }
    }
    open.removeIf(Connection::isLastBatch);
  }

  /**
   * Returns whether enough calls were answered and the JIT compiled for at most {@value
   * #QUIET_COMPILE_MILLIS} ms over the period of at least {@link #QUIET} that has just ended; a
   * new period starts whenever one ends. Once true, stays true.
   */
  private boolean settled() {
    if (settled) {
      return true;
    }
    long now = clock.monotonicNanos();
    if (now - quietSince < QUIET.toNanos()) {
      return false;
    }
    long compiled = compileMillis.getAsLong();
    boolean quiet = compiled - quietCompileMillis <= QUIET_COMPILE_MILLIS;
    quietSince = now;
    quietCompileMillis = compiled;
    settled = quiet && answered >= MIN_CALLS;
    return settled;
  }

  /** Returns the read or connect timeout the deadline allows, remembering it. */
  private int socketTimeoutMillis() {
    lastTimeoutMillis = deadline.socketTimeoutMillis();
    return lastTimeoutMillis;
  }

  /**
   * The HPACK blocks (RFC 7541) of a connection's calls, as a proxy's encoder writes them: Huffman
   * codes, the first call's headers added to the dynamic table and every later call's taken from
   * it.
   *
   * @param first the first call's block
   * @param repeat every later call's block
   */
  record HeaderBlocks(byte[] first, byte[] repeat) {

    /** Encodes the headers of a call to {@code path}, with {@code timeout} unless it is null. */
    static HeaderBlocks of(String path, String authority, String timeout) throws Http2Exception {
      Http2Headers headers =
          new DefaultHttp2Headers()
              .method("POST")
              .scheme("http")
              .path(path)
              .authority(authority)
              .add("content-type", "application/grpc")
              .add("te", "trailers")
              .add("user-agent", "weir-warm-up");
      if (timeout != null) {
        headers.add("grpc-timeout", timeout);
      }
      DefaultHttp2HeadersEncoder encoder =
          new DefaultHttp2HeadersEncoder(Http2HeadersEncoder.NEVER_SENSITIVE, false, 64, 0);
      return new HeaderBlocks(encode(encoder, 1, headers), encode(encoder, 3, headers));
    }

    private static byte[] encode(
        DefaultHttp2HeadersEncoder encoder, int stream, Http2Headers headers)
        throws Http2Exception {
      ByteBuf block = Unpooled.buffer();
      try {
        encoder.encodeHeaders(stream, headers, block);
        return ByteBufUtil.getBytes(block);
      } finally {
        block.release();
      }
    }
  }

  /** One client connection: its socket and the calls it has made. */
  private final class Connection {
    private final Socket socket = new Socket();
    private final boolean cut;
    private final HeaderBlocks headers;
    private final DataInputStream in;
    private final OutputStream out;
    private int stream = 1;
    private int made;

    /**
     * Connects and writes the preface, empty settings and the largest connection window; with
     * {@code cut}, the connection ends with a call in flight and its calls carry {@link #TIMEOUT}.
     */
    Connection(boolean cut) throws IOException {
      this.cut = cut;
      this.headers = cut ? timed : plain;
      try {
        socket.setTcpNoDelay(true);
        socket.connect(target, socketTimeoutMillis());
        in = new DataInputStream(new BufferedInputStream(socket.getInputStream(), READ_BUFFER));
        out = socket.getOutputStream();
        ByteArrayOutputStream opening = new ByteArrayOutputStream();
        opening.writeBytes(WarmUpFrames.PREFACE);
        opening.writeBytes(WarmUpFrames.frame(WarmUpFrames.SETTINGS, 0, 0, new byte[0]));
        opening.writeBytes(
            WarmUpFrames.connectionWindowUpdate(
                WarmUpFrames.MAX_WINDOW - WarmUpFrames.DEFAULT_WINDOW));
        out.write(opening.toByteArray());
      } catch (IOException e) {
        close();
        throw e;
      }
    }

    /** Writes {@value #IN_FLIGHT} calls, each with the next message. */
    void writeBatch() throws IOException {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      for (int call = 0; call < IN_FLIGHT; call++, stream += 2) {
        byte[] message = messages.get(next);
        next = (next + 1) % messages.size();
        bytes.writeBytes(
            WarmUpFrames.frame(
                WarmUpFrames.HEADERS, WarmUpFrames.END_HEADERS, stream, headerBlock()));
        bytes.writeBytes(
            WarmUpFrames.frame(WarmUpFrames.DATA, WarmUpFrames.END_STREAM, stream, message));
      }
      out.write(bytes.toByteArray());
      out.flush();
      made += IN_FLIGHT;
      calls += IN_FLIGHT;
    }

    /** Returns the next call's header block. */
    private byte[] headerBlock() {
      return stream == 1 ? headers.first() : headers.repeat();
    }

    /** Returns whether the batch last written is the connection's last. */
    boolean isLastBatch() {
      return made >= CALLS_PER_CONNECTION;
    }

    /** Reads until every call of the last batch has ended, counting those with a message. */
    void readAnswers() throws IOException {
      int ended = 0;
      while (ended < IN_FLIGHT && deadline.before()) {
        socket.setSoTimeout(socketTimeoutMillis());
        WarmUpFrames.Frame frame = WarmUpFrames.read(in, out);
        if (frame.type() == WarmUpFrames.DATA && frame.payload().length > 0) {
          answered++;
        }
        if (frame.endsStream()) {
          ended++;
        }
      }
    }

    /** Closes the connection, with {@code cut} after opening one more call it leaves open. */
    void end() throws IOException {
      if (cut) {
        out.write(
            WarmUpFrames.frame(
                WarmUpFrames.HEADERS, WarmUpFrames.END_HEADERS, stream, headerBlock()));
        out.flush();
      }
      close();
    }

    void close() {
      try {
        socket.close();
      } catch (IOException e) {
        // nothing was promised to the server; the warm-up carries on without this connection
      }
    }
  }
}
