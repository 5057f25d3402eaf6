package dev.weir.envoy.xds;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.config.EnvReader;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The channel {@link XdsChannels} opens, against a management server on a local port. */
class XdsChannelsTest {

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

  @Test
  void additionalHeaders_reachTheServer_aBinaryOneAsTheValuesUtf8Bytes() throws Exception {
    CompletableFuture<Metadata> received = new CompletableFuture<>();
    ServerInterceptor recorder =
        new ServerInterceptor() {
          @Override
          public <Q, R> ServerCall.Listener<Q> interceptCall(
              ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
            received.complete(headers);
            return next.startCall(call, headers);
          }
        };
    server =
        NettyServerBuilder.forPort(0)
            .addService(ServerInterceptors.intercept(new RateLimitConfigServer(), recorder))
            .build()
            .start();
    XdsSettings settings =
        XdsSettings.from(
            new EnvReader(
                Map.of(
                    "WEIR_ENVOY_XDS_SERVER_URL", "localhost:" + server.getPort(),
                    "WEIR_ENVOY_XDS_CLIENT_ADDITIONAL_HEADERS",
                        "authorization:Bearer t,X-Token-Bin:s3cr\u00e9t")),
            UnaryOperator.identity());
    channel = XdsChannels.open(settings);

    AggregatedDiscoveryServiceGrpc.newStub(channel)
        .streamAggregatedResources(
            new StreamObserver<DiscoveryResponse>() {
              @Override
              public void onNext(DiscoveryResponse value) {}

              @Override
              public void onError(Throwable t) {}

              @Override
              public void onCompleted() {}
            })
        .onNext(DiscoveryRequest.newBuilder().setTypeUrl(XdsConfigClient.TYPE_URL).build());

    Metadata headers = received.get(30, TimeUnit.SECONDS);
    assertThat(headers.get(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER)))
        .isEqualTo("Bearer t");
    assertThat(headers.get(Metadata.Key.of("x-token-bin", Metadata.BINARY_BYTE_MARSHALLER)))
        .isEqualTo("s3cr\u00e9t".getBytes(StandardCharsets.UTF_8));
  }
}
