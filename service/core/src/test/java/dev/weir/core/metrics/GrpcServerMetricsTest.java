package dev.weir.core.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.RecordingMetrics;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class GrpcServerMetricsTest {

  private static final String METHOD = "pb.gubernator.V1/GetRateLimits";

  private final FakeClock clock = new FakeClock();
  private final RecordingMetrics metrics = new RecordingMetrics();
  private Server server;
  private ManagedChannel channel;

  @BeforeEach
  void start() throws Exception {
    V1Grpc.V1ImplBase service =
        new V1Grpc.V1ImplBase() {
          @Override
          public void getRateLimits(
              GetRateLimitsReq request, StreamObserver<GetRateLimitsResp> observer) {
            clock.advance(Duration.ofMillis(3));
            observer.onNext(GetRateLimitsResp.getDefaultInstance());
            observer.onCompleted();
          }
        };
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .addService(service)
            .addStreamTracerFactory(new GrpcServerMetrics(metrics, clock))
            .maxInboundMessageSize(1024)
            .directExecutor()
            .build()
            .start();
    channel =
        NettyChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext().build();
  }

  @AfterEach
  void stop() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  private List<String> awaitEvents(int count) throws InterruptedException {
    Await.holdsWithin(Duration.ofSeconds(10), () -> metrics.events().size() >= count);
    return metrics.events();
  }

  @Test
  void call_ok_methodCodeAndFakeClockLatencyRecorded() throws Exception {
    V1Grpc.newBlockingStub(channel).getRateLimits(GetRateLimitsReq.getDefaultInstance());

    assertThat(awaitEvents(1)).containsExactly("grpc " + METHOD + " OK 3000000");
  }

  @Test
  void call_messageOverMaximum_refusedAndCountedAsResourceExhausted() throws Exception {
    GetRateLimitsReq big =
        GetRateLimitsReq.newBuilder()
            .addRequests(RateLimitReq.newBuilder().setName("n").setUniqueKey("k".repeat(2000)))
            .build();

    assertThatThrownBy(() -> V1Grpc.newBlockingStub(channel).getRateLimits(big))
        .isInstanceOf(StatusRuntimeException.class)
        .hasMessageStartingWith("RESOURCE_EXHAUSTED");
    assertThat(awaitEvents(2))
        .containsExactly(
            "refused grpc_message_too_large", "grpc " + METHOD + " RESOURCE_EXHAUSTED 0");
  }

  @Test
  void call_unknownMethod_labelledUnknown() throws Exception {
    io.grpc.MethodDescriptor<GetRateLimitsReq, GetRateLimitsResp> bogus =
        V1Grpc.getGetRateLimitsMethod().toBuilder().setFullMethodName("x.Y/Z").build();

    assertThatThrownBy(
            () ->
                io.grpc.stub.ClientCalls.blockingUnaryCall(
                    channel, bogus, io.grpc.CallOptions.DEFAULT, GetRateLimitsReq.getDefaultInstance()))
        .hasMessageStartingWith("UNIMPLEMENTED");
    assertThat(awaitEvents(1)).containsExactly("grpc unknown UNIMPLEMENTED 0");
  }

  @Test
  void warmUpHeader_factorysTokenOnTheWarmUpMethod_onlyThatCallNotCounted() {
    GrpcServerMetrics factory = new GrpcServerMetrics(metrics, clock);
    Metadata marked = new Metadata();
    marked.put(GrpcServerMetrics.WARM_UP_HEADER, factory.warmUpToken());
    Metadata guessed = new Metadata();
    guessed.put(GrpcServerMetrics.WARM_UP_HEADER, "1");

    factory
        .newServerStreamTracer(GrpcServerMetrics.WARM_UP_METHOD, marked)
        .streamClosed(io.grpc.Status.UNAVAILABLE);
    factory
        .newServerStreamTracer(GrpcServerMetrics.WARM_UP_METHOD, guessed)
        .streamClosed(io.grpc.Status.OK);
    factory.newServerStreamTracer(METHOD, marked).streamClosed(io.grpc.Status.OK);

    assertThat(metrics.events())
        .containsExactly(
            "grpc " + GrpcServerMetrics.UNKNOWN_METHOD + " OK 0",
            "grpc " + GrpcServerMetrics.UNKNOWN_METHOD + " OK 0");
    assertThat(factory.warmUpToken())
        .isNotEqualTo(new GrpcServerMetrics(metrics, clock).warmUpToken());
  }
}
