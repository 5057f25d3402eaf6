package dev.weir.core.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
}
