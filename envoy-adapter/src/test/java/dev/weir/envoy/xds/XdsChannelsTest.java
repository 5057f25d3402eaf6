package dev.weir.envoy.xds;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.config.EnvReader;
import dev.weir.core.testkit.Await;
import dev.weir.tls.CertificateAuthority;
import dev.weir.tls.Pem;
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
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import io.grpc.stub.StreamObserver;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The channel {@link XdsChannels} opens, against a management server on a local port. */
class XdsChannelsTest {

  private static final Duration WAIT = Duration.ofSeconds(20);

  @TempDir Path dir;
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

  @Test
  void serverCertificateWithoutTheSan_isRefused_andWithItTheStreamOpens() throws Exception {
    CertificateAuthority ca = CertificateAuthority.create("xds-ca", Duration.ofDays(1));
    CertificateAuthority.Identity serverId =
        ca.issue("envoy-gateway", List.of("envoy-gateway"), Duration.ofDays(1));
    RateLimitConfigServer management = new RateLimitConfigServer();
    server =
        NettyServerBuilder.forPort(0)
            .sslContext(
                GrpcSslContexts.configure(
                        SslContextBuilder.forServer(serverId.key(), serverId.chain()))
                    .build())
            .addService(management)
            .build()
            .start();
    Path caFile = Files.writeString(dir.resolve("ca.crt"), Pem.encode(ca.certificate()));

    Throwable refused = subscribe(tlsTo(caFile, "other-name")).get(30, TimeUnit.SECONDS);
    assertThat(Status.fromThrowable(refused).getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(Stream.iterate(refused, Objects::nonNull, Throwable::getCause))
        .hasAtLeastOneElementOfType(SSLHandshakeException.class);
    assertThat(management.requests()).isEmpty();

    channel.shutdownNow();
    CompletableFuture<Throwable> accepted = subscribe(tlsTo(caFile, "envoy-gateway"));
    Await.until(WAIT, () -> management.requests().size() == 1, "the subscription arrived");
    assertThat(accepted).isNotDone();
  }

  private XdsSettings tlsTo(Path caFile, String san) {
    return XdsSettings.from(
        new EnvReader(
            Map.of(
                "WEIR_ENVOY_XDS_SERVER_URL", "127.0.0.1:" + server.getPort(),
                "WEIR_ENVOY_XDS_SERVER_USE_TLS", "true",
                "WEIR_ENVOY_XDS_SERVER_TLS_CACERT", caFile.toString(),
                "WEIR_ENVOY_XDS_SERVER_TLS_SAN", san)),
        UnaryOperator.identity());
  }

  /**
   * Subscribes over a channel {@code settings} open and returns what the stream fails with, or
   * null when it completes.
   */
  private CompletableFuture<Throwable> subscribe(XdsSettings settings) {
    channel = XdsChannels.open(settings);
    CompletableFuture<Throwable> ended = new CompletableFuture<>();
    AggregatedDiscoveryServiceGrpc.newStub(channel)
        .streamAggregatedResources(
            new StreamObserver<DiscoveryResponse>() {
              @Override
              public void onNext(DiscoveryResponse value) {}

              @Override
              public void onError(Throwable t) {
                ended.complete(t);
              }

              @Override
              public void onCompleted() {
                ended.complete(null);
              }
            })
        .onNext(DiscoveryRequest.newBuilder().setTypeUrl(XdsConfigClient.TYPE_URL).build());
    return ended;
  }
}
