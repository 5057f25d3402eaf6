package dev.weir.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.testkit.Await;
import dev.weir.envoy.xds.RateLimitConfigServer;
import dev.weir.proto.ratelimit.config.v3.RateLimitConfig;
import dev.weir.proto.ratelimit.config.v3.RateLimitDescriptor;
import dev.weir.proto.ratelimit.config.v3.RateLimitPolicy;
import dev.weir.proto.ratelimit.config.v3.RateLimitUnit;
import dev.weir.tls.CertificateAuthority;
import dev.weir.tls.Pem;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.Entry;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.ClientAuth;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The image swap Envoy Gateway users make, as a process: {@code weir.jar ratelimit} started with
 * exactly the environment Envoy Gateway's default rate-limit Deployment sets (xDS over mutual TLS,
 * gRPC with client certificates required, {@code FORCE_START_WITHOUT_INITIAL_CONFIG}, StatsD, a
 * Redis URL), an ADS server pushing the config Envoy Gateway generates for a global limit per
 * header value, and Envoy's generated client sending the descriptors its route actions produce.
 */
class EnvoyGatewaySwapJarIT {

  private static final Duration WAIT = Duration.ofSeconds(60);

  /** Envoy Gateway's domain: the listener's name. */
  private static final String DOMAIN = "default/eg/http";

  /** Envoy Gateway's route-rule descriptor, sent by a {@code generic_key} action. */
  private static final String ROUTE = "httproute/default/backend/rule/0/match/0/*";

  /** Envoy Gateway's descriptor key of the header's value ({@code request_headers} action). */
  private static final String HEADER_KEY = "rule-0-match-0";

  /** The rule path in the reference's stat names: key_value, then a key-only level. */
  private static final String STAT_PREFIX =
      "ratelimit.service.rate_limit." + DOMAIN + "." + ROUTE + "_" + ROUTE + "." + HEADER_KEY + ".";

  @TempDir Path certs;
  private final HttpClient http = HttpClient.newHttpClient();
  private final RateLimitConfigServer envoyGateway = new RateLimitConfigServer();
  private Server xds;
  private DatagramSocket statsd;
  private NodeProcess node;
  private ManagedChannel envoy;

  @AfterEach
  void stop() throws Exception {
    if (envoy != null) {
      envoy.shutdownNow();
    }
    if (node != null) {
      node.terminate(Duration.ofSeconds(30));
    }
    if (statsd != null) {
      statsd.close();
    }
    if (xds != null) {
      xds.shutdownNow().awaitTermination();
    }
  }

  /** The RateLimitConfig Envoy Gateway generates for 3 requests an hour per x-user-id value. */
  private static RateLimitConfig perUserPerHour(int requests) {
    return RateLimitConfig.newBuilder()
        .setName(DOMAIN)
        .setDomain(DOMAIN)
        .addDescriptors(
            RateLimitDescriptor.newBuilder()
                .setKey(ROUTE)
                .setValue(ROUTE)
                .addDescriptors(
                    RateLimitDescriptor.newBuilder()
                        .setKey(HEADER_KEY)
                        .setRateLimit(
                            RateLimitPolicy.newBuilder()
                                .setUnit(RateLimitUnit.HOUR)
                                .setRequestsPerUnit(requests))))
        .build();
  }

  /** The request Envoy sends for a call on the route with {@code x-user-id: user}. */
  private static RateLimitRequest call(String user) {
    return RateLimitRequest.newBuilder()
        .setDomain(DOMAIN)
        .addDescriptors(
            io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.newBuilder()
                .addEntries(entry(ROUTE, ROUTE))
                .addEntries(entry(HEADER_KEY, user)))
        .build();
  }

  private static Entry entry(String key, String value) {
    return Entry.newBuilder().setKey(key).setValue(value).build();
  }

  private Path write(String name, String pem) throws Exception {
    return Files.writeString(certs.resolve(name), pem);
  }

  /** Adds the counts of the StatsD lines that arrive within {@code wait} to {@code counted}. */
  private void receive(Map<String, Long> counted, Duration wait) throws Exception {
    statsd.setSoTimeout((int) wait.toMillis());
    DatagramPacket packet = new DatagramPacket(new byte[65_536], 65_536);
    try {
      statsd.receive(packet);
    } catch (SocketTimeoutException nothingYet) {
      return;
    }
    String lines = new String(packet.getData(), 0, packet.getLength(), StandardCharsets.UTF_8);
    for (String line : lines.split("\n")) {
      int colon = line.lastIndexOf(':');
      int bar = line.lastIndexOf("|c");
      if (colon > 0 && bar > colon) {
        long count = Long.parseLong(line.substring(colon + 1, bar));
        counted.merge(line.substring(0, colon), count, Long::sum);
      }
    }
  }

  @Test
  void envoyGatewayEnvironment_xdsConfigEnforcedOverMutualTls_healthcheckAndReferenceStats()
      throws Exception {
    CertificateAuthority ca = CertificateAuthority.create("envoy-gateway-ca", Duration.ofDays(1));
    CertificateAuthority.Identity gatewayId =
        ca.issue("envoy-gateway", List.of("envoy-gateway", "127.0.0.1"), Duration.ofDays(1));
    CertificateAuthority.Identity ratelimitId =
        ca.issue("envoy-ratelimit", List.of("envoy-ratelimit", "127.0.0.1"), Duration.ofDays(1));
    CertificateAuthority.Identity envoyId = ca.issue("envoy", List.of("envoy"), Duration.ofDays(1));
    Path tlsCrt = write("tls.crt", Pem.encode((Object[]) ratelimitId.chain()));
    Path tlsKey = write("tls.key", Pem.encode(ratelimitId.key()));
    Path caCrt = write("ca.crt", Pem.encode(ca.certificate()));
    xds =
        NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
            .sslContext(
                GrpcSslContexts.configure(
                        SslContextBuilder.forServer(gatewayId.key(), gatewayId.chain()))
                    .trustManager(ca.certificate())
                    .clientAuth(ClientAuth.REQUIRE)
                    .build())
            .addService(envoyGateway)
            .build()
            .start();
    envoyGateway.push("1", perUserPerHour(3));
    statsd = new DatagramSocket(0, InetAddress.getByName("127.0.0.1"));
    int grpcPort = NodeProcess.freePort();
    int httpPort = NodeProcess.freePort();
    Map<String, String> env = new HashMap<>();
    env.put("RUNTIME_ROOT", "/data");
    env.put("RUNTIME_SUBDIRECTORY", "ratelimit");
    env.put("RUNTIME_IGNOREDOTFILES", "true");
    env.put("RUNTIME_WATCH_ROOT", "false");
    env.put("LOG_LEVEL", "info");
    env.put("USE_STATSD", "true");
    env.put("STATSD_PORT", Integer.toString(statsd.getLocalPort()));
    env.put("CONFIG_TYPE", "GRPC_XDS_SOTW");
    env.put("CONFIG_GRPC_XDS_SERVER_URL", "127.0.0.1:" + xds.getPort());
    env.put("CONFIG_GRPC_XDS_NODE_ID", "envoy-ratelimit");
    env.put("GRPC_SERVER_USE_TLS", "true");
    env.put("GRPC_SERVER_TLS_CERT", tlsCrt.toString());
    env.put("GRPC_SERVER_TLS_KEY", tlsKey.toString());
    env.put("GRPC_SERVER_TLS_CA_CERT", caCrt.toString());
    env.put("CONFIG_GRPC_XDS_SERVER_USE_TLS", "true");
    env.put("CONFIG_GRPC_XDS_CLIENT_TLS_CERT", tlsCrt.toString());
    env.put("CONFIG_GRPC_XDS_CLIENT_TLS_KEY", tlsKey.toString());
    env.put("CONFIG_GRPC_XDS_SERVER_TLS_CACERT", caCrt.toString());
    env.put("FORCE_START_WITHOUT_INITIAL_CONFIG", "true");
    env.put("REDIS_SOCKET_TYPE", "tcp");
    env.put("REDIS_URL", "redis.redis-system.svc.cluster.local:6379");
    env.put("GRPC_PORT", Integer.toString(grpcPort));
    env.put("PORT", Integer.toString(httpPort));
    env.put("DEBUG_PORT", Integer.toString(NodeProcess.freePort()));

    node = NodeProcess.start(grpcPort, httpPort, env, "ratelimit");
    node.awaitHealthy(http, node.httpUri("/healthcheck"));
    Await.until(
        WAIT,
        () ->
            !envoyGateway.requests().isEmpty()
                && envoyGateway.lastRequest().getVersionInfo().equals("1"),
        "Envoy Gateway's config ACKed");
    envoy =
        NettyChannelBuilder.forAddress("127.0.0.1", grpcPort)
            .sslContext(
                GrpcSslContexts.forClient()
                    .keyManager(envoyId.key(), envoyId.chain())
                    .trustManager(ca.certificate())
                    .build())
            .build();
    var rls = RateLimitServiceGrpc.newBlockingStub(envoy);
    List<Code> alice = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      alice.add(rls.shouldRateLimit(call("alice")).getOverallCode());
    }
    Code bob = rls.shouldRateLimit(call("bob")).getOverallCode();
    HttpResponse<String> healthcheck =
        http.send(
            HttpRequest.newBuilder(node.httpUri("/healthcheck")).build(),
            HttpResponse.BodyHandlers.ofString());
    Map<String, Long> stats = new HashMap<>();
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (stats.getOrDefault(STAT_PREFIX + "total_hits", 0L) < 5 && System.nanoTime() < deadline) {
      receive(stats, Duration.ofSeconds(1));
    }

    assertThat(alice).containsExactly(Code.OK, Code.OK, Code.OK, Code.OVER_LIMIT);
    assertThat(bob).isEqualTo(Code.OK);
    assertThat(healthcheck.statusCode()).isEqualTo(200);
    assertThat(healthcheck.body()).isEqualTo("OK");
    assertThat(envoyGateway.lastRequest().hasErrorDetail()).isFalse();
    assertThat(stats)
        .containsEntry(STAT_PREFIX + "total_hits", 5L)
        .containsEntry(STAT_PREFIX + "over_limit", 1L)
        .containsEntry(STAT_PREFIX + "within_limit", 4L)
        .containsEntry("ratelimit.service.config_load_success", 1L);
    assertThat(node.stdout() + node.stderr())
        .contains(
            "Weir keeps counters in its own cluster, not in Redis or Memcache: ignoring"
                + " REDIS_SOCKET_TYPE, REDIS_URL");
  }
}
