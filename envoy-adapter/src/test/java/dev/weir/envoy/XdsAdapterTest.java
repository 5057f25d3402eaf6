package dev.weir.envoy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.LocalRateLimitService;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.xds.RateLimitConfigServer;
import dev.weir.proto.ratelimit.config.v3.RateLimitConfig;
import dev.weir.proto.ratelimit.config.v3.RateLimitDescriptor;
import dev.weir.proto.ratelimit.config.v3.RateLimitPolicy;
import dev.weir.proto.ratelimit.config.v3.RateLimitUnit;
import dev.weir.tls.CertificateAuthority;
import dev.weir.tls.Pem;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.ClientAuth;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The adapter with the xDS source, end to end over a real socket: mutual TLS to the management
 * server, and decisions that follow each pushed config without a restart.
 */
class XdsAdapterTest {

  private static final Duration WAIT = Duration.ofSeconds(20);

  @TempDir Path dir;
  private final FakeClock clock = new FakeClock();
  private final RateLimitConfigServer management = new RateLimitConfigServer();
  private final ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor();
  private Server xdsServer;
  private EnvoyAdapter adapter;
  private Server rls;
  private ManagedChannel rlsChannel;

  @AfterEach
  void stop() throws Exception {
    if (rlsChannel != null) {
      rlsChannel.shutdownNow();
      rls.shutdownNow();
    }
    if (adapter != null) {
      adapter.close();
    }
    executor.shutdownNow();
    xdsServer.shutdownNow().awaitTermination();
  }

  private static RateLimitConfig perMinute(int requests) {
    return RateLimitConfig.newBuilder()
        .setName("shop")
        .setDomain("shop")
        .addDescriptors(
            RateLimitDescriptor.newBuilder()
                .setKey("user")
                .setRateLimit(
                    RateLimitPolicy.newBuilder()
                        .setUnit(RateLimitUnit.MINUTE)
                        .setRequestsPerUnit(requests)))
        .build();
  }

  private Path write(String name, String pem) throws Exception {
    return Files.writeString(dir.resolve(name), pem);
  }

  @Test
  void pushedConfigs_overMutualTls_changeDecisionsWithoutARestart() throws Exception {
    CertificateAuthority ca = CertificateAuthority.create("xds-ca", Duration.ofDays(1));
    CertificateAuthority.Identity serverId =
        ca.issue("envoy-gateway", List.of("envoy-gateway", "localhost"), Duration.ofDays(1));
    CertificateAuthority.Identity clientId =
        ca.issue("envoy-ratelimit", List.of("envoy-ratelimit"), Duration.ofDays(1));
    xdsServer =
        NettyServerBuilder.forPort(0)
            .sslContext(
                GrpcSslContexts.configure(
                        SslContextBuilder.forServer(serverId.key(), serverId.chain()))
                    .trustManager(ca.certificate())
                    .clientAuth(ClientAuth.REQUIRE)
                    .build())
            .addService(management)
            .build()
            .start();
    management.push("1", perMinute(1));
    EnvoySettings settings =
        EnvoySettings.fromEnvironment(
            Map.of(
                "WEIR_ENVOY_CONFIG_SOURCE", "xds",
                "WEIR_ENVOY_XDS_SERVER_URL", "127.0.0.1:" + xdsServer.getPort(),
                "WEIR_ENVOY_XDS_SERVER_USE_TLS", "true",
                "WEIR_ENVOY_XDS_CLIENT_TLS_CERT",
                    write("tls.crt", Pem.encode((Object[]) clientId.chain())).toString(),
                "WEIR_ENVOY_XDS_CLIENT_TLS_KEY", write("tls.key", Pem.encode(clientId.key())).toString(),
                "WEIR_ENVOY_XDS_SERVER_TLS_CACERT",
                    write("ca.crt", Pem.encode(ca.certificate())).toString(),
                "WEIR_ENVOY_XDS_SERVER_TLS_SAN", "envoy-gateway"));
    adapter =
        EnvoyAdapter.start(
            settings,
            new LocalRateLimitService(
                new LocalLimiter(
                    new RateLimitEngine(ZoneOffset.UTC), new InMemoryBucketStore(clock), clock),
                "127.0.0.1:1051"),
            clock,
            new EnvoyMetrics(new SimpleMeterRegistry()),
            InputLimits.DEFAULTS,
            CheckMeter.NOOP);
    assertThat(adapter.hasDomains()).isFalse();
    String name = InProcessServerBuilder.generateName();
    rls = InProcessServerBuilder.forName(name).addService(adapter.grpcService()).build().start();
    rlsChannel = InProcessChannelBuilder.forName(name).build();
    var stub = RateLimitServiceGrpc.newBlockingStub(rlsChannel);
    RateLimitRequest request =
        RateLimitRequest.newBuilder()
            .setDomain("shop")
            .addDescriptors(
                io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.newBuilder()
                    .addEntries(
                        io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor
                            .Entry.newBuilder()
                            .setKey("user")
                            .setValue("alice")))
            .build();

    adapter.watch(executor);
    Await.until(WAIT, adapter::hasDomains, "the first pushed config loaded");
    Code first = stub.shouldRateLimit(request).getOverallCode();
    Code second = stub.shouldRateLimit(request).getOverallCode();
    management.push("2", perMinute(3));
    Await.until(
        WAIT,
        () ->
            adapter.xdsClient().acceptedVersion().orElse("").equals("2")
                && management.lastRequest().getVersionInfo().equals("2"),
        "version 2 accepted and its ACK received");
    Code third = stub.shouldRateLimit(request).getOverallCode();

    assertThat(List.of(first, second, third))
        .containsExactly(Code.OK, Code.OVER_LIMIT, Code.OK);
    assertThat(management.lastRequest().hasErrorDetail()).isFalse();
  }
}
