package dev.weir.gubernator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.LocalRateLimitService;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.Status;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.time.ZoneOffset;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@code pb.gubernator.V1} over the real single-node service and engine. */
class V1ServiceLocalTest {

  private final FakeClock clock = new FakeClock();
  private Server server;
  private ManagedChannel channel;
  private V1Grpc.V1BlockingStub stub;

  @BeforeEach
  void start() throws Exception {
    LocalRateLimitService service =
        new LocalRateLimitService(
            new LocalLimiter(
                new RateLimitEngine(ZoneOffset.UTC), new InMemoryBucketStore(clock), clock),
            "127.0.0.1:1051");
    String name = InProcessServerBuilder.generateName();
    server =
        InProcessServerBuilder.forName(name)
            .directExecutor()
            .addService(new V1Service(service, service))
            .build()
            .start();
    channel = InProcessChannelBuilder.forName(name).directExecutor().build();
    stub = V1Grpc.newBlockingStub(channel);
  }

  @AfterEach
  void stop() {
    channel.shutdownNow();
    server.shutdownNow();
  }

  private static RateLimitReq item(String key, long limit) {
    return RateLimitReq.newBuilder()
        .setName("requests_per_sec")
        .setUniqueKey(key)
        .setHits(1)
        .setLimit(limit)
        .setDuration(1000)
        .build();
  }

  private RateLimitResp checkOne(RateLimitReq item) {
    return stub.getRateLimits(GetRateLimitsReq.newBuilder().addRequests(item).build())
        .getResponses(0);
  }

  @Test
  void getRateLimits_limitTwo_underUnderOver() {
    RateLimitReq item = item("account:1", 2);

    assertThat(checkOne(item).getStatus()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(checkOne(item).getStatus()).isEqualTo(Status.UNDER_LIMIT);
    RateLimitResp third = checkOne(item);
    assertThat(third.getStatus()).isEqualTo(Status.OVER_LIMIT);
    assertThat(third.getRemaining()).isZero();
    assertThat(third.getResetTime()).isEqualTo(clock.wallMillis() + 1000);
  }

  @Test
  void getRateLimits_1001Items_outOfRange() {
    assertOutOfRange(Collections.nCopies(1001, item("k", 10)));
  }

  @Test
  void getRateLimits_200000EmptyItems_outOfRangeAs1001() {
    assertOutOfRange(Collections.nCopies(200_000, RateLimitReq.getDefaultInstance()));
  }

  private void assertOutOfRange(List<RateLimitReq> items) {
    GetRateLimitsReq req = GetRateLimitsReq.newBuilder().addAllRequests(items).build();

    assertThatThrownBy(() -> stub.getRateLimits(req))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(io.grpc.Status.Code.OUT_OF_RANGE);
              assertThat(e.getStatus().getDescription())
                  .isEqualTo("Requests.RateLimits list too large; max size is '1000'");
            });
  }

  @Test
  void getRateLimits_emptyUniqueKeyAmongValid_itemErrorOthersAnswered() {
    GetRateLimitsResp resp =
        stub.getRateLimits(
            GetRateLimitsReq.newBuilder()
                .addRequests(item("a", 10))
                .addRequests(item("", 10))
                .addRequests(item("b", 10).toBuilder().setName(""))
                .addRequests(item("c", 10))
                .build());

    assertThat(resp.getResponsesList())
        .extracting(RateLimitResp::getError)
        .containsExactly(
            "", "field 'unique_key' cannot be empty", "field 'namespace' cannot be empty", "");
    assertThat(resp.getResponses(3).getRemaining()).isEqualTo(9);
  }

  @Test
  void getRateLimits_createdAtSent_resetTimeFollowsIt() {
    long createdAt = clock.wallMillis() - 250;

    RateLimitResp resp = checkOne(item("t", 5).toBuilder().setCreatedAt(createdAt).build());

    assertThat(resp.getResetTime()).isEqualTo(createdAt + 1000);
  }
}
