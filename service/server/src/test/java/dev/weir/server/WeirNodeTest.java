package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.HealthCheckReq;
import dev.weir.proto.gubernator.Status;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.reflection.v1.ServerReflectionGrpc;
import io.grpc.reflection.v1.ServerReflectionRequest;
import io.grpc.reflection.v1.ServerReflectionResponse;
import io.grpc.reflection.v1.ServiceResponse;
import io.grpc.stub.StreamObserver;
import java.net.ConnectException;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class WeirNodeTest {

  private final FakeClock clock = new FakeClock();
  private WeirNode node;
  private ManagedChannel channel;

  @BeforeEach
  void start() throws Exception {
    WeirConfig config = TestConfigs.loopback();
    node = WeirNode.builder(config).clock(clock).store(new InMemoryBucketStore(clock)).start();
    channel = NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort()).usePlaintext().build();
  }

  @AfterEach
  void stop() throws Exception {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    node.close();
  }

  @Test
  void start_portZero_boundPortsAndAdvertisedPortReported() {
    assertThat(node.grpcPort()).isPositive();
    assertThat(node.httpPort()).isPositive();
    assertThat(node.advertiseAddress()).isEqualTo(new HostPort("127.0.0.1", node.grpcPort()));
  }

  @Test
  void getRateLimits_overGrpc_limitEnforced() {
    V1Grpc.V1BlockingStub stub = V1Grpc.newBlockingStub(channel);
    GetRateLimitsReq req = TestRequests.oneHit(2);

    assertThat(stub.getRateLimits(req).getResponses(0).getStatus()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(stub.getRateLimits(req).getResponses(0).getStatus()).isEqualTo(Status.UNDER_LIMIT);
    assertThat(stub.getRateLimits(req).getResponses(0).getStatus()).isEqualTo(Status.OVER_LIMIT);
  }

  @Test
  void healthCheck_overGrpc_advertisesItself() {
    assertThat(
            V1Grpc.newBlockingStub(channel)
                .healthCheck(HealthCheckReq.getDefaultInstance())
                .getAdvertiseAddress())
        .isEqualTo("127.0.0.1:" + node.grpcPort());
  }

  @Test
  void grpcHealth_healthyNode_serving() {
    HealthGrpc.HealthBlockingStub health = HealthGrpc.newBlockingStub(channel);

    assertThat(health.check(HealthCheckRequest.getDefaultInstance()).getStatus())
        .isEqualTo(ServingStatus.SERVING);
    assertThat(
            health
                .check(HealthCheckRequest.newBuilder().setService("pb.gubernator.V1").build())
                .getStatus())
        .isEqualTo(ServingStatus.SERVING);
  }

  @Test
  void reflection_listServices_includesV1AndHealth() throws Exception {
    CompletableFuture<ServerReflectionResponse> answer = new CompletableFuture<>();
    StreamObserver<ServerReflectionRequest> requests =
        ServerReflectionGrpc.newStub(channel)
            .serverReflectionInfo(
                new StreamObserver<>() {
                  @Override
                  public void onNext(ServerReflectionResponse value) {
                    answer.complete(value);
                  }

                  @Override
                  public void onError(Throwable t) {
                    answer.completeExceptionally(t);
                  }

                  @Override
                  public void onCompleted() {}
                });
    requests.onNext(ServerReflectionRequest.newBuilder().setListServices("").build());
    requests.onCompleted();

    assertThat(answer.get(5, TimeUnit.SECONDS).getListServicesResponse().getServiceList())
        .extracting(ServiceResponse::getName)
        .contains("pb.gubernator.V1", "weir.v1.Ring", "grpc.health.v1.Health");
  }

  @Test
  void reflectionV1Alpha_listServicesAndDescribe_answersLikeV1() throws Exception {
    io.grpc.reflection.v1alpha.ServerReflectionResponse listed =
        askV1Alpha(
            io.grpc.reflection.v1alpha.ServerReflectionRequest.newBuilder()
                .setListServices("")
                .build());
    io.grpc.reflection.v1alpha.ServerReflectionResponse described =
        askV1Alpha(
            io.grpc.reflection.v1alpha.ServerReflectionRequest.newBuilder()
                .setFileContainingSymbol("pb.gubernator.V1")
                .build());

    assertThat(listed.getListServicesResponse().getServiceList())
        .extracting(io.grpc.reflection.v1alpha.ServiceResponse::getName)
        .contains(
            "pb.gubernator.V1",
            "grpc.health.v1.Health",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection");
    assertThat(described.getFileDescriptorResponse().getFileDescriptorProtoList()).isNotEmpty();
  }

  private io.grpc.reflection.v1alpha.ServerReflectionResponse askV1Alpha(
      io.grpc.reflection.v1alpha.ServerReflectionRequest request) throws Exception {
    CompletableFuture<io.grpc.reflection.v1alpha.ServerReflectionResponse> answer =
        new CompletableFuture<>();
    StreamObserver<io.grpc.reflection.v1alpha.ServerReflectionRequest> requests =
        io.grpc.reflection.v1alpha.ServerReflectionGrpc.newStub(channel)
            .serverReflectionInfo(
                new StreamObserver<>() {
                  @Override
                  public void onNext(io.grpc.reflection.v1alpha.ServerReflectionResponse value) {
                    answer.complete(value);
                  }

                  @Override
                  public void onError(Throwable t) {
                    answer.completeExceptionally(t);
                  }

                  @Override
                  public void onCompleted() {}
                });
    requests.onNext(request);
    requests.onCompleted();
    return answer.get(5, TimeUnit.SECONDS);
  }

  @Test
  void httpGateway_healthCheck_200() throws Exception {
    HttpResponse<String> response =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + node.httpPort() + "/v1/HealthCheck"))
                    .build(),
                HttpResponse.BodyHandlers.ofString());

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.body()).contains("\"status\":\"healthy\"");
  }

  @Test
  void close_running_listenersStopAndHealthNotServing() {
    int httpPort = node.httpPort();
    int grpcPort = node.grpcPort();

    node.close();
    node.close();

    assertThatThrownBy(() -> new Socket("127.0.0.1", httpPort).close())
        .isInstanceOf(ConnectException.class);
    assertThatThrownBy(() -> new Socket("127.0.0.1", grpcPort).close())
        .isInstanceOf(ConnectException.class);
  }
}
