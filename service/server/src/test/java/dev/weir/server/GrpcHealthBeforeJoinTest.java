package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

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
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class GrpcHealthBeforeJoinTest {

  private Server server;
  private ManagedChannel channel;

  @AfterEach
  void stop() throws Exception {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (server != null) {
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
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
    HealthGrpc.HealthBlockingStub health = serve(WeirNode.notServingHealth());

    assertThat(health.check(HealthCheckRequest.getDefaultInstance()).getStatus())
        .isEqualTo(ServingStatus.NOT_SERVING);
    assertThat(
            health
                .check(HealthCheckRequest.newBuilder().setService("pb.gubernator.V1").build())
                .getStatus())
        .isEqualTo(ServingStatus.NOT_SERVING);
  }
}
