package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.RawGrpc;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServerStreamTracer;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.DefaultHttp2HeadersDecoder;
import io.netty.handler.codec.http2.DefaultHttp2HeadersEncoder;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersEncoder;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class DecisionWarmUpTest {

  private static final String METHOD = "test.Echo/Call";
  private static final Duration LONG = Duration.ofMinutes(1);
  private static final List<byte[]> MESSAGES = List.of(new byte[] {1}, new byte[] {2, 2});
  private static final Metadata.Key<String> TIMEOUT =
      Metadata.Key.of("grpc-timeout", Metadata.ASCII_STRING_MARSHALLER);

  private final FakeClock clock = new FakeClock();
  private final AtomicLong withTimeout = new AtomicLong();
  private final AtomicLong withoutTimeout = new AtomicLong();
  private final AtomicLong cut = new AtomicLong();
  private final AtomicLong compileMillis = new AtomicLong();
  private Server server;

  @AfterEach
  void stop() throws Exception {
    if (server != null) {
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  /**
   * Starts a gRPC server whose {@link #METHOD} answers each request with itself, moving the fake
   * clock by a millisecond per call and recording each call's timeout header and whether it was
   * answered.
   */
  private InetSocketAddress serve() throws Exception {
    MethodDescriptor<byte[], byte[]> echo =
        MethodDescriptor.<byte[], byte[]>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName(METHOD)
            .setRequestMarshaller(RawGrpc.BYTES)
            .setResponseMarshaller(RawGrpc.BYTES)
            .build();
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
            .directExecutor()
            .addService(
                ServerServiceDefinition.builder("test.Echo")
                    .addMethod(
                        echo,
                        ServerCalls.asyncUnaryCall(
                            (byte[] request, StreamObserver<byte[]> answer) -> {
                              answer.onNext(request);
                              answer.onCompleted();
                            }))
                    .build())
            .addStreamTracerFactory(
                new ServerStreamTracer.Factory() {
                  @Override
                  public ServerStreamTracer newServerStreamTracer(String method, Metadata headers) {
                    (headers.containsKey(TIMEOUT) ? withTimeout : withoutTimeout).incrementAndGet();
                    clock.advanceMillis(1);
                    return new ServerStreamTracer() {
                      @Override
                      public void streamClosed(Status status) {
                        if (!status.isOk()
                            && status.getCode() != Status.Code.DEADLINE_EXCEEDED) {
                          cut.incrementAndGet();
                        }
                      }
                    };
                  }
                })
            .build()
            .start();
    return new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getPort());
  }

  private DecisionWarmUp.Result run(InetSocketAddress target, String path, Duration budget) {
    return DecisionWarmUp.run(target, path, MESSAGES, budget, clock, compileMillis::get);
  }

  @Test
  void run_quietCompiler_endsSettledOnceEnoughCallsWereAnswered() throws Exception {
    InetSocketAddress target = serve();

    DecisionWarmUp.Result result = run(target, "/" + METHOD, LONG);

    assertThat(result.failure()).isNull();
    assertThat(result.settled()).isTrue();
    assertThat(result.answered())
        .isBetween(
            DecisionWarmUp.MIN_CALLS,
            DecisionWarmUp.MIN_CALLS + 2 * DecisionWarmUp.QUIET.toMillis());
    assertThat(result.calls()).isGreaterThanOrEqualTo(result.answered());
    assertThat(result.connections()).isGreaterThan(DecisionWarmUp.CONNECTIONS_AT_ONCE);
    assertThat(withTimeout.get()).as("calls with a grpc-timeout").isPositive();
    assertThat(withoutTimeout.get()).as("calls without one").isPositive();
    Await.until(
        Duration.ofSeconds(10),
        () -> cut.get() > 0,
        "a call left open on a connection that closed to end without an answer");
  }

  @Test
  void run_compilerNeverQuiet_endsWhenTheBudgetHasPassed() throws Exception {
    InetSocketAddress target = serve();
    Duration budget = Duration.ofSeconds(5);

    DecisionWarmUp.Result result =
        DecisionWarmUp.run(
            target,
            "/" + METHOD,
            MESSAGES,
            budget,
            clock,
            () -> compileMillis.addAndGet(DecisionWarmUp.QUIET_COMPILE_MILLIS + 1));

    int round = DecisionWarmUp.CONNECTIONS_AT_ONCE * DecisionWarmUp.IN_FLIGHT;
    assertThat(result.failure()).isNull();
    assertThat(result.settled()).isFalse();
    assertThat(result.answered())
        .isBetween(budget.toMillis() - 2 * round, budget.toMillis() + 2 * round);
    assertThat(result.elapsed()).isGreaterThanOrEqualTo(budget);
  }

  @Test
  void run_methodNotServed_stopsAfterOneRoundSayingSo() throws Exception {
    InetSocketAddress target = serve();

    DecisionWarmUp.Result result = run(target, "/test.Nothing/Call", LONG);

    assertThat(result.answered()).isZero();
    assertThat(result.calls())
        .isEqualTo(DecisionWarmUp.CONNECTIONS_AT_ONCE * DecisionWarmUp.IN_FLIGHT);
    assertThat(result.failure()).isEqualTo("no call was answered with a message");
    assertThat(result.settled()).isFalse();
  }

  @Test
  void run_nothingListening_stopsWithTheConnectFailure() throws Exception {
    InetSocketAddress target;
    try (ServerSocket closed = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      target = new InetSocketAddress(InetAddress.getLoopbackAddress(), closed.getLocalPort());
    }

    DecisionWarmUp.Result result = run(target, "/" + METHOD, LONG);

    assertThat(result.connections()).isZero();
    assertThat(result.failure()).contains("ConnectException");
  }

  @Test
  void headerBlocks_huffmanCodedThenTakenFromTheDynamicTable() throws Exception {
    DecisionWarmUp.HeaderBlocks blocks =
        DecisionWarmUp.HeaderBlocks.of("/" + METHOD, "localhost:1051", "1S");
    DefaultHttp2HeadersDecoder decoder = new DefaultHttp2HeadersDecoder(false);

    Http2Headers first = decode(decoder, blocks.first());
    Http2Headers repeat = decode(decoder, blocks.repeat());

    assertThat(first.path().toString()).isEqualTo("/" + METHOD);
    assertThat(first.get("te").toString()).isEqualTo("trailers");
    assertThat(first.get("grpc-timeout").toString()).isEqualTo("1S");
    assertThat(repeat).isEqualTo(first);
    assertThat(blocks.repeat()).as("one byte per field").hasSize(first.size());
    for (byte field : blocks.repeat()) {
      assertThat(field & 0x80).as("an indexed field").isEqualTo(0x80);
    }
    ByteBuf plain = Unpooled.buffer();
    new DefaultHttp2HeadersEncoder(
            Http2HeadersEncoder.NEVER_SENSITIVE, false, 64, Integer.MAX_VALUE)
        .encodeHeaders(1, first, plain);
    assertThat(blocks.first().length)
        .as("Huffman-coded, so shorter than the same fields as plain literals")
        .isLessThan(plain.readableBytes());
    plain.release();
  }

  private static Http2Headers decode(DefaultHttp2HeadersDecoder decoder, byte[] block)
      throws Exception {
    ByteBuf bytes = Unpooled.wrappedBuffer(block);
    try {
      return decoder.decodeHeaders(1, bytes);
    } finally {
      bytes.release();
    }
  }

  @Test
  void run_messageLongerThanTheLimit_refused() {
    InetSocketAddress target = new InetSocketAddress(InetAddress.getLoopbackAddress(), 1);
    List<byte[]> messages = List.of(new byte[DecisionWarmUp.MAX_MESSAGE_BYTES + 1]);

    assertThatThrownBy(
            () -> DecisionWarmUp.run(target, "/" + METHOD, messages, LONG, clock, () -> 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("a warm-up message of 3001 bytes; at most 3000 are sent");
  }

  @Test
  void run_noMessages_refused() {
    InetSocketAddress target = new InetSocketAddress(InetAddress.getLoopbackAddress(), 1);

    assertThatThrownBy(
            () -> DecisionWarmUp.run(target, "/" + METHOD, List.of(), LONG, clock, () -> 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("a decision warm-up needs at least one message");
  }
}
