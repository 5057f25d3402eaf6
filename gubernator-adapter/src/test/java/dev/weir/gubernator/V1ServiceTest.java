package dev.weir.gubernator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.health.HealthStatus;
import dev.weir.core.limiter.RequestTooLargeException;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.HealthCheckReq;
import dev.weir.proto.gubernator.HealthCheckResp;
import dev.weir.proto.gubernator.LiveCheckReq;
import dev.weir.proto.gubernator.LiveCheckResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class V1ServiceTest {

  private final FakeRateLimitService service = new FakeRateLimitService();
  private Server server;
  private ManagedChannel channel;
  private V1Grpc.V1BlockingStub stub;

  @BeforeEach
  void start() throws Exception {
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

  private static RateLimitReq item(String key) {
    return RateLimitReq.newBuilder()
        .setName("requests_per_sec")
        .setUniqueKey(key)
        .setHits(1)
        .setLimit(10)
        .setDuration(1000)
        .build();
  }

  @Test
  void getRateLimits_items_mappedInOrder() {
    GetRateLimitsResp resp =
        stub.getRateLimits(
            GetRateLimitsReq.newBuilder()
                .addRequests(item("a"))
                .addRequests(item("b").toBuilder().setHits(3).setCreatedAt(77))
                .build());

    assertThat(service.calls).hasSize(1);
    assertThat(service.calls.get(0))
        .extracting(RateLimitRequest::uniqueKey)
        .containsExactly("a", "b");
    assertThat(service.calls.get(0))
        .extracting(RateLimitRequest::createdAt)
        .containsExactly(0L, 77L);
    assertThat(resp.getResponsesList()).hasSize(2);
    assertThat(resp.getResponses(1).getRemaining()).isEqualTo(7);
    assertThat(resp.getResponses(1).getResetTime()).isEqualTo(77);
  }

  @Test
  void getRateLimits_tooLarge_outOfRangeWithMessage() {
    service.answer =
        items ->
            CompletableFuture.failedFuture(
                new RequestTooLargeException(
                    "Requests.RateLimits list too large; max size is '1000'"));

    assertThatThrownBy(() -> stub.getRateLimits(GetRateLimitsReq.getDefaultInstance()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.OUT_OF_RANGE);
              assertThat(e.getStatus().getDescription())
                  .isEqualTo("Requests.RateLimits list too large; max size is '1000'");
            });
  }

  @Test
  void getRateLimits_serviceThrows_internalAndServerKeepsServing() {
    service.answer =
        items -> {
          throw new IllegalStateException("kaput");
        };

    assertThatThrownBy(() -> stub.getRateLimits(GetRateLimitsReq.getDefaultInstance()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INTERNAL);
              assertThat(e.getStatus().getDescription()).contains("kaput");
            });
    assertThat(stub.liveCheck(LiveCheckReq.getDefaultInstance()))
        .isEqualTo(LiveCheckResp.getDefaultInstance());
  }

  @Test
  void getRateLimits_futureFailsUnexpectedly_internal() {
    service.answer = items -> CompletableFuture.failedFuture(new ArithmeticException("overflow"));

    assertThatThrownBy(() -> stub.getRateLimits(GetRateLimitsReq.getDefaultInstance()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INTERNAL);
              assertThat(e.getStatus().getDescription()).contains("overflow");
            });
  }

  @Test
  void healthCheck_healthy_reportsPeers() {
    HealthCheckResp resp = stub.healthCheck(HealthCheckReq.getDefaultInstance());

    assertThat(resp.getStatus()).isEqualTo("healthy");
    assertThat(resp.getPeerCount()).isEqualTo(1);
    assertThat(resp.getAdvertiseAddress()).isEqualTo("127.0.0.1:1051");
    assertThat(resp.getLocalPeers(0).getGrpcAddress()).isEqualTo("127.0.0.1:1051");
  }

  @Test
  void healthCheck_healthyWithDiscoveryProblem_okCarryingTheMessage() {
    String problem = "DNS lookup of weir-peers failed (no A or AAAA records); keeping the last 1 known peers";
    service.health = new HealthStatus(true, problem, 1, "a:1", List.of("a:1"));

    HealthCheckResp resp = stub.healthCheck(HealthCheckReq.getDefaultInstance());

    assertThat(resp.getStatus()).isEqualTo("healthy");
    assertThat(resp.getMessage()).isEqualTo(problem);
  }

  @Test
  void healthCheck_unhealthy_unavailableWithMessage() {
    service.health =
        new HealthStatus(false, "peer b:1 unreachable", 2, "a:1", List.of("a:1", "b:1"));

    assertThatThrownBy(() -> stub.healthCheck(HealthCheckReq.getDefaultInstance()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
              assertThat(e.getStatus().getDescription()).isEqualTo("peer b:1 unreachable");
            });
  }

  @Test
  void liveCheck_running_empty() {
    assertThat(stub.liveCheck(LiveCheckReq.getDefaultInstance()))
        .isEqualTo(LiveCheckResp.getDefaultInstance());
  }
}
