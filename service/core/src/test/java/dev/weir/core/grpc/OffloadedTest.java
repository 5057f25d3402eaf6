package dev.weir.core.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.PeersV1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.StreamObserver;
import java.util.ArrayDeque;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.slf4j.LoggerFactory;

class OffloadedTest {

  /** The failures a pooled handler's callback may end with, and whether each ends its thread. */
  private static Stream<Arguments> failures() {
    return Stream.of(
        Arguments.of(new IllegalStateException("handler bug"), false),
        Arguments.of(new StackOverflowError("handler recursed too deep"), false),
        Arguments.of(new AssertionError("handler's invariant broken"), false),
        Arguments.of(new OutOfMemoryError("handler's heap exhausted"), true));
  }

  /** What the pool's threads died of, recorded in place of the JVM's print to stderr. */
  private final BlockingQueue<Throwable> deaths = new LinkedBlockingQueue<>();

  private final ExecutorService pool =
      Executors.newSingleThreadExecutor(
          runnable -> {
            Thread thread = new Thread(runnable, "offloaded-test");
            thread.setUncaughtExceptionHandler((t, e) -> deaths.add(e));
            return thread;
          });
  private Server server;
  private ManagedChannel channel;

  @AfterEach
  void stop() {
    if (channel != null) {
      channel.shutdownNow();
      server.shutdownNow();
    }
    pool.shutdownNow();
  }

  private void serve(PeersV1Grpc.PeersV1ImplBase handler) throws Exception {
    serve(handler.bindService());
  }

  private void serve(ServerServiceDefinition service) throws Exception {
    String name = InProcessServerBuilder.generateName();
    server =
        InProcessServerBuilder.forName(name)
            .directExecutor()
            .addService(Offloaded.service(service, Set.of(), pool))
            .build()
            .start();
    channel = InProcessChannelBuilder.forName(name).directExecutor().build();
  }

  /**
   * A GetPeerRateLimits handler whose first call's half-close throws {@code failure}, recording
   * the thread it threw on and the thread that completed or cancelled that call, and whose later
   * calls answer.
   */
  private static final class FailingFirstCall {
    final CompletableFuture<Thread> threw = new CompletableFuture<>();
    final CompletableFuture<Thread> ended = new CompletableFuture<>();
    private final AtomicInteger calls = new AtomicInteger();
    private final Throwable failure;

    FailingFirstCall(Throwable failure) {
      this.failure = failure;
    }

    ServerServiceDefinition service() {
      MethodDescriptor<GetPeerRateLimitsReq, GetPeerRateLimitsResp> method =
          PeersV1Grpc.getGetPeerRateLimitsMethod();
      return ServerServiceDefinition.builder(PeersV1Grpc.SERVICE_NAME)
          .addMethod(method, this::startCall)
          .build();
    }

    private ServerCall.Listener<GetPeerRateLimitsReq> startCall(
        ServerCall<GetPeerRateLimitsReq, GetPeerRateLimitsResp> call, Metadata headers) {
      boolean first = calls.incrementAndGet() == 1;
      call.request(2);
      return new ServerCall.Listener<>() {
        @Override
        public void onHalfClose() {
          if (first) {
            threw.complete(Thread.currentThread());
            throwUnchecked(failure);
          }
          call.sendHeaders(new Metadata());
          call.sendMessage(GetPeerRateLimitsResp.getDefaultInstance());
          call.close(Status.OK, new Metadata());
        }

        @Override
        public void onComplete() {
          if (first) {
            ended.complete(Thread.currentThread());
          }
        }

        @Override
        public void onCancel() {
          if (first) {
            ended.complete(Thread.currentThread());
          }
        }
      };
    }

    private static void throwUnchecked(Throwable failure) {
      if (failure instanceof Error error) {
        throw error;
      }
      throw (RuntimeException) failure;
    }
  }

  @ParameterizedTest
  @MethodSource("failures")
  void handlerThrowsOnThePool_callClosedAtOnceItsLaterCallbacksRunAndLaterCallsServed(
      Throwable failure, boolean endsTheThread) throws Exception {
    FailingFirstCall handler = new FailingFirstCall(failure);
    serve(handler.service());
    PeersV1Grpc.PeersV1BlockingStub stub =
        PeersV1Grpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS);

    assertThatThrownBy(() -> stub.getPeerRateLimits(GetPeerRateLimitsReq.getDefaultInstance()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNKNOWN));
    Thread threw = handler.threw.get(5, TimeUnit.SECONDS);
    Thread ended = handler.ended.get(5, TimeUnit.SECONDS);
    if (endsTheThread) {
      assertThat(deaths.poll(5, TimeUnit.SECONDS)).isSameAs(failure);
      assertThat(ended).isNotSameAs(threw);
    } else {
      assertThat(ended).isSameAs(threw);
    }
    assertThat(
            PeersV1Grpc.newBlockingStub(channel)
                .withDeadlineAfter(5, TimeUnit.SECONDS)
                .getPeerRateLimits(GetPeerRateLimitsReq.getDefaultInstance()))
        .isNotNull();
    assertThat(deaths).isEmpty();
  }

  /** A call that only records the status it is closed with. */
  private static final class ClosedStatus
      extends ServerCall<GetPeerRateLimitsReq, GetPeerRateLimitsResp> {
    Status status;

    @Override
    public void request(int numMessages) {}

    @Override
    public void sendHeaders(Metadata headers) {}

    @Override
    public void sendMessage(GetPeerRateLimitsResp message) {}

    @Override
    public void close(Status status, Metadata trailers) {
      this.status = status;
    }

    @Override
    public boolean isCancelled() {
      return false;
    }

    @Override
    public MethodDescriptor<GetPeerRateLimitsReq, GetPeerRateLimitsResp> getMethodDescriptor() {
      return PeersV1Grpc.getGetPeerRateLimitsMethod();
    }
  }

  @SuppressWarnings("unchecked")
  @Test
  void fatalErrorWhileThePoolShutsDown_callClosedAndTheErrorRethrownWithTheRefusalSuppressed() {
    OutOfMemoryError failure = new OutOfMemoryError("handler's heap exhausted");
    FailingFirstCall handler = new FailingFirstCall(failure);
    Queue<Runnable> runs = new ArrayDeque<>();
    Executor shuttingDownOnceThrown =
        task -> {
          if (handler.threw.isDone()) {
            throw new RejectedExecutionException("pool shut down");
          }
          runs.add(task);
        };
    ServerCallHandler<GetPeerRateLimitsReq, GetPeerRateLimitsResp> offloaded =
        (ServerCallHandler<GetPeerRateLimitsReq, GetPeerRateLimitsResp>)
            Offloaded.service(handler.service(), Set.of(), shuttingDownOnceThrown)
                .getMethod(PeersV1Grpc.getGetPeerRateLimitsMethod().getFullMethodName())
                .getServerCallHandler();
    ClosedStatus call = new ClosedStatus();
    ServerCall.Listener<GetPeerRateLimitsReq> listener = offloaded.startCall(call, new Metadata());
    listener.onHalfClose();
    listener.onComplete();

    assertThatThrownBy(() -> runs.remove().run())
        .isSameAs(failure)
        .satisfies(
            e ->
                assertThat(e.getSuppressed())
                    .singleElement()
                    .isInstanceOf(RejectedExecutionException.class));
    assertThat(call.status.getCode()).isEqualTo(Status.Code.UNKNOWN);
    assertThat(runs).isEmpty();
  }

  /** What a handler throws on every call in the flood test, a type no other test throws. */
  private static final class FloodingFailure extends RuntimeException {
    FloodingFailure() {
      super("fails on every call");
    }
  }

  @Test
  void handlerThrowsOnEveryCall_oneWarningPerIntervalNotOnePerCall() throws Exception {
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    appender.start();
    Logger log = (Logger) LoggerFactory.getLogger(Offloaded.class);
    log.addAppender(appender);
    try {
      serve(
          new PeersV1Grpc.PeersV1ImplBase() {
            @Override
            public void getPeerRateLimits(
                GetPeerRateLimitsReq request, StreamObserver<GetPeerRateLimitsResp> answer) {
              throw new FloodingFailure();
            }
          });
      PeersV1Grpc.PeersV1BlockingStub stub =
          PeersV1Grpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS);

      for (int i = 0; i < 5; i++) {
        assertThatThrownBy(() -> stub.getPeerRateLimits(GetPeerRateLimitsReq.getDefaultInstance()))
            .isInstanceOf(StatusRuntimeException.class);
      }

      assertThat(appender.list)
          .filteredOn(e -> e.getThrowableProxy() != null)
          .filteredOn(
              e -> e.getThrowableProxy().getClassName().equals(FloodingFailure.class.getName()))
          .hasSize(1);
    } finally {
      log.detachAppender(appender);
    }
  }
}
