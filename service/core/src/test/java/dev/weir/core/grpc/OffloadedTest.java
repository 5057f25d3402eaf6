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
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.StreamObserver;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

class OffloadedTest {

  private final ExecutorService pool = Executors.newSingleThreadExecutor();
  private final AtomicInteger calls = new AtomicInteger();
  private Server server;
  private ManagedChannel channel;

  @AfterEach
  void stop() {
    channel.shutdownNow();
    server.shutdownNow();
    pool.shutdownNow();
  }

  /** A handler whose first call throws and whose later calls answer. */
  private final PeersV1Grpc.PeersV1ImplBase throwingOnce =
      new PeersV1Grpc.PeersV1ImplBase() {
        @Override
        public void getPeerRateLimits(
            GetPeerRateLimitsReq request, StreamObserver<GetPeerRateLimitsResp> answer) {
          if (calls.incrementAndGet() == 1) {
            throw new IllegalStateException("handler bug");
          }
          answer.onNext(GetPeerRateLimitsResp.getDefaultInstance());
          answer.onCompleted();
        }
      };

  /** A handler whose first call throws {@code StackOverflowError} and whose later calls answer. */
  private final PeersV1Grpc.PeersV1ImplBase erringOnce =
      new PeersV1Grpc.PeersV1ImplBase() {
        @Override
        public void getPeerRateLimits(
            GetPeerRateLimitsReq request, StreamObserver<GetPeerRateLimitsResp> answer) {
          if (calls.incrementAndGet() == 1) {
            throw new StackOverflowError("handler recursed too deep");
          }
          answer.onNext(GetPeerRateLimitsResp.getDefaultInstance());
          answer.onCompleted();
        }
      };

  private void serve(PeersV1Grpc.PeersV1ImplBase handler) throws Exception {
    String name = InProcessServerBuilder.generateName();
    server =
        InProcessServerBuilder.forName(name)
            .directExecutor()
            .addService(Offloaded.service(handler.bindService(), Set.of(), pool))
            .build()
            .start();
    channel = InProcessChannelBuilder.forName(name).directExecutor().build();
  }

  @Test
  void handlerThrowsOnThePool_callClosedAtOnceAndLaterCallsServed() throws Exception {
    serve(throwingOnce);
    PeersV1Grpc.PeersV1BlockingStub stub =
        PeersV1Grpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS);

    assertThatThrownBy(() -> stub.getPeerRateLimits(GetPeerRateLimitsReq.getDefaultInstance()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNKNOWN));
    assertThat(
            PeersV1Grpc.newBlockingStub(channel)
                .withDeadlineAfter(5, TimeUnit.SECONDS)
                .getPeerRateLimits(GetPeerRateLimitsReq.getDefaultInstance()))
        .isNotNull();
  }

  @Test
  void handlerThrowsAnErrorOnThePool_callClosedAtOnceAndLaterCallsServed() throws Exception {
    serve(erringOnce);
    PeersV1Grpc.PeersV1BlockingStub stub =
        PeersV1Grpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS);

    assertThatThrownBy(() -> stub.getPeerRateLimits(GetPeerRateLimitsReq.getDefaultInstance()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNKNOWN));
    assertThat(
            PeersV1Grpc.newBlockingStub(channel)
                .withDeadlineAfter(5, TimeUnit.SECONDS)
                .getPeerRateLimits(GetPeerRateLimitsReq.getDefaultInstance()))
        .isNotNull();
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
