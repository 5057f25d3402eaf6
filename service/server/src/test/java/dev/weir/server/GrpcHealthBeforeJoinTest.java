package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.testkit.EtcdProcess;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class GrpcHealthBeforeJoinTest {

  private Server server;
  private ManagedChannel channel;
  private WeirNode node;

  @AfterEach
  void stop() throws Exception {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (server != null) {
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (node != null) {
      node.close();
    }
  }

  private HealthGrpc.HealthBlockingStub serve(HealthStatusManager health) throws Exception {
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
            .addService(health.getHealthService())
            .build()
            .start();
    channel =
        NettyChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext().build();
    return HealthGrpc.newBlockingStub(channel);
  }

  @Test
  void notServingHealth_beforeFirstRefresh_nodeAndV1NotServing() throws Exception {
    HealthGrpc.HealthBlockingStub health = serve(GrpcHealth.notServing());

    assertThat(health.check(HealthCheckRequest.getDefaultInstance()).getStatus())
        .isEqualTo(ServingStatus.NOT_SERVING);
    assertThat(
            health
                .check(HealthCheckRequest.newBuilder().setService("pb.gubernator.V1").build())
                .getStatus())
        .isEqualTo(ServingStatus.NOT_SERVING);
  }

  @Test
  void node_discoveryNeverDeliversPeers_grpcNotServingAndHealthCheckSaysWaiting() throws Exception {
    String nowhere = "http://127.0.0.1:" + EtcdProcess.freePort();
    node =
        WeirNode.builder(TestConfigs.loopback())
            .discovery(
                DiscoverySettings.fromEnv(
                    Map.of(
                        "WEIR_PEER_DISCOVERY_TYPE", "etcd",
                        "WEIR_ETCD_ENDPOINTS", nowhere,
                        "WEIR_ETCD_DIAL_TIMEOUT", "300ms"),
                    "127.0.0.1:0"))
            .peers(TestConfigs.peers())
            .start();
    channel = NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort()).usePlaintext().build();
    HttpResponse<String> healthCheck =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + node.httpPort() + "/v1/HealthCheck"))
                    .build(),
                HttpResponse.BodyHandlers.ofString());

    assertThat(
            HealthGrpc.newBlockingStub(channel)
                .check(HealthCheckRequest.getDefaultInstance())
                .getStatus())
        .isEqualTo(ServingStatus.NOT_SERVING);
    assertThat(healthCheck.statusCode()).isEqualTo(503);
    assertThat(healthCheck.body()).contains("waiting for peer discovery");
  }
}
