package dev.weir.core.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.HealthCheckReq;
import dev.weir.proto.gubernator.HealthCheckResp;
import dev.weir.proto.gubernator.PeersV1Grpc;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.BindableService;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class LateBoundServiceTest {

  private final LateBoundService late = LateBoundService.of(V1Grpc.getServiceDescriptor());
  private Server server;
  private ManagedChannel channel;

  @AfterEach
  void stop() {
    if (channel != null) {
      channel.shutdownNow();
    }
    if (server != null) {
      server.shutdownNow();
    }
  }

  private V1Grpc.V1BlockingStub serve() throws Exception {
    String name = InProcessServerBuilder.generateName();
    server = InProcessServerBuilder.forName(name).addService(late.definition()).build().start();
    channel = InProcessChannelBuilder.forName(name).build();
    return V1Grpc.newBlockingStub(channel);
  }

  private static final class Answering extends V1Grpc.V1ImplBase {
    @Override
    public void healthCheck(HealthCheckReq request, StreamObserver<HealthCheckResp> out) {
      out.onNext(HealthCheckResp.newBuilder().setStatus("healthy").build());
      out.onCompleted();
    }
  }

  @Test
  void call_beforeBind_unavailable() throws Exception {
    V1Grpc.V1BlockingStub stub = serve();

    assertThatThrownBy(() -> stub.healthCheck(HealthCheckReq.getDefaultInstance()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(Code.UNAVAILABLE);
              assertThat(e.getStatus().getDescription()).isEqualTo("the server is starting; retry");
            });
  }

  @Test
  void call_afterBind_reachesTheBoundService() throws Exception {
    V1Grpc.V1BlockingStub stub = serve();

    late.bind(new Answering());

    assertThat(stub.healthCheck(HealthCheckReq.getDefaultInstance()).getStatus())
        .isEqualTo("healthy");
  }

  @Test
  void bind_otherService_refusedNamingBoth() {
    assertThatThrownBy(() -> late.bind(new PeersV1Grpc.PeersV1ImplBase() {}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("expected an implementation of pb.gubernator.V1, got pb.gubernator.PeersV1");
  }

  @Test
  void bind_methodUnderAnotherDescriptor_refusedNamingTheMethod() {
    MethodDescriptor<GetRateLimitsReq, GetRateLimitsResp> copy =
        V1Grpc.getGetRateLimitsMethod().toBuilder().build();
    ServiceDescriptor other =
        ServiceDescriptor.newBuilder(V1Grpc.SERVICE_NAME)
            .addMethod(copy)
            .addMethod(V1Grpc.getHealthCheckMethod())
            .addMethod(V1Grpc.getLiveCheckMethod())
            .build();
    BindableService service =
        () ->
            ServerServiceDefinition.builder(other)
                .addMethod(copy, ServerCalls.asyncUnaryCall((request, out) -> out.onCompleted()))
                .addMethod(
                    V1Grpc.getHealthCheckMethod(),
                    ServerCalls.asyncUnaryCall((request, out) -> out.onCompleted()))
                .addMethod(
                    V1Grpc.getLiveCheckMethod(),
                    ServerCalls.asyncUnaryCall((request, out) -> out.onCompleted()))
                .build();

    assertThatThrownBy(() -> late.bind(service))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith(
            "pb.gubernator.V1/GetRateLimits is bound with another method descriptor");
  }
}
