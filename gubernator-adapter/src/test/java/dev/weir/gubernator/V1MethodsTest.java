package dev.weir.gubernator;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.LocalRateLimitService;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.net.InetSocketAddress;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link V1Methods}' marshallers, alone and behind a real gRPC server on loopback. */
class V1MethodsTest {

  @Test
  void clientSide_requestsAndAnswers_roundTripThroughTheGeneratedMessages() throws Exception {
    RateLimitRequest item =
        new RateLimitRequest("n", "k", 2, 10, 1000, 1, 8, 3, 77, Map.of("trace", "t"));
    GetRateLimitsReq sent =
        GetRateLimitsReq.parseFrom(V1Methods.GET_RATE_LIMITS.streamRequest(List.of(item)));
    assertThat(ProtoMapping.toModel(sent)).containsExactly(item);

    GetRateLimitsResp answered =
        GetRateLimitsResp.newBuilder()
            .addResponses(
                RateLimitResp.newBuilder()
                    .setStatus(dev.weir.proto.gubernator.Status.OVER_LIMIT)
                    .setLimit(10)
                    .setResetTime(5)
                    .putMetadata("owner", "a:1"))
            .build();
    assertThat(V1Methods.GET_RATE_LIMITS.parseResponse(answered.toByteString().newInput()))
        .containsExactly(
            new RateLimitResponse(Status.OVER_LIMIT, 10, 0, 5, "", Map.of("owner", "a:1")));
  }

  @Test
  void getRateLimits_gzipCompressedOverLoopback_answeredLikeAPlainCall() throws Exception {
    FakeClock clock = new FakeClock();
    LocalRateLimitService service =
        new LocalRateLimitService(
            new LocalLimiter(
                new RateLimitEngine(ZoneOffset.UTC), new InMemoryBucketStore(clock), clock),
            "127.0.0.1:1051");
    Server server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .directExecutor()
            .addService(new V1Service(service, service))
            .build()
            .start();
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext().build();
    try {
      V1Grpc.V1BlockingStub stub = V1Grpc.newBlockingStub(channel);
      GetRateLimitsReq request =
          GetRateLimitsReq.newBuilder()
              .addRequests(
                  RateLimitReq.newBuilder()
                      .setName("requests_per_sec")
                      .setUniqueKey("account:1")
                      .setHits(1)
                      .setLimit(2)
                      .setDuration(1000))
              .build();

      RateLimitResp plain = stub.getRateLimits(request).getResponses(0);
      RateLimitResp gzip = stub.withCompression("gzip").getRateLimits(request).getResponses(0);

      assertThat(plain.getRemaining()).isEqualTo(1);
      assertThat(gzip.getRemaining()).isZero();
      assertThat(gzip.getStatus()).isEqualTo(dev.weir.proto.gubernator.Status.UNDER_LIMIT);
      assertThat(gzip.getLimit()).isEqualTo(2);
    } finally {
      channel.shutdownNow();
      server.shutdownNow();
    }
  }
}
