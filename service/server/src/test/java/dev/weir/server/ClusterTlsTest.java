package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.peer.auth.PeerSecurity;
import dev.weir.core.cluster.peer.auth.PeerSettings;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.store.ClockBucketStore;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FreePorts;
import dev.weir.proto.gubernator.AnnounceReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.PeersV1Grpc;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.V1Grpc;
import dev.weir.tls.CertificateAuthority;
import dev.weir.tls.ClientAuth;
import dev.weir.tls.Pem;
import dev.weir.tls.TlsSettings;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.ManagedChannel;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.CertificateException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two cluster members under mutual TLS: forwarding works between them over their peer listeners; a
 * stranger, a client without a certificate and a sidecar whose certificate the cluster's CA signed
 * are refused there, and the client port does not serve the peer protocol at all.
 */
class ClusterTlsTest {

  private static final List<String> HOSTS = List.of("localhost", "127.0.0.1");
  private static final Duration YEAR = Duration.ofDays(365);
  private static final String SERVER_NAME = "weir-peers.test";

  @TempDir Path dir;
  private final FakeClock clock = new FakeClock();
  private final List<AutoCloseable> resources = new ArrayList<>();

  @AfterEach
  void close() throws Exception {
    for (int i = resources.size() - 1; i >= 0; i--) {
      resources.get(i).close();
    }
  }

  private TlsSettings files(String name, CertificateAuthority issuer) throws Exception {
    return files(name, issuer, HOSTS);
  }

  private TlsSettings files(String name, CertificateAuthority issuer, List<String> names)
      throws Exception {
    CertificateAuthority.Identity identity = issuer.issue(name, names, YEAR);
    Path cert = dir.resolve(name + "-cert.pem");
    Path key = dir.resolve(name + "-key.pem");
    Files.writeString(cert, Pem.encode((Object[]) identity.chain()));
    Files.writeString(key, Pem.encode(identity.key()));
    return new TlsSettings(
        Optional.of(cert), Optional.of(key), Optional.of(dir.resolve("ca.pem")),
        ClientAuth.REQUIRE_AND_VERIFY, "TLSv1.3", false, Duration.ofSeconds(10));
  }

  private WeirNode node(int grpcPort, int peerPort, List<String> peers, TlsSettings tls)
      throws Exception {
    return node(grpcPort, peerPort, peers, tls, Optional.empty());
  }

  private WeirNode node(
      int grpcPort, int peerPort, List<String> peers, TlsSettings tls, Optional<String> serverName)
      throws Exception {
    WeirConfig config = TestConfigs.loopback(grpcPort);
    WeirNode node =
        WeirNode.builder(config)
            .cluster(ClusterSettings.defaults().withStaticPeers(peers).withHandoff(false))
            .ops(new OpsSettings(InputLimits.DEFAULTS, Duration.ZERO, Duration.ofSeconds(5), tls))
            .peers(
                new PeerSettings(
                    new HostPort("127.0.0.1", peerPort),
                    Optional.empty(),
                    Optional.empty(),
                    serverName,
                    false))
            .clock(clock)
            .store(new ClockBucketStore(clock, 1000))
            .start();
    resources.add(node);
    return node;
  }

  private ManagedChannel channel(int port, ChannelCredentials credentials) {
    ManagedChannel channel =
        Grpc.newChannelBuilderForAddress("localhost", port, credentials).build();
    resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    return channel;
  }

  private static GetRateLimitsResp check(V1Grpc.V1BlockingStub stub, int attempt) {
    GetRateLimitsReq.Builder request = GetRateLimitsReq.newBuilder();
    for (int i = 0; i < 20; i++) {
      request.addRequests(
          RateLimitReq.newBuilder()
              .setName("n" + attempt)
              .setUniqueKey("key-" + i)
              .setHits(1)
              .setLimit(5)
              .setDuration(60_000));
    }
    return stub.withDeadlineAfter(10, TimeUnit.SECONDS).getRateLimits(request.build());
  }

  private static boolean forwarded(WeirNode node) {
    return node.cluster().peers().clients().stream().anyMatch(c -> c.itemsSent() > 0);
  }

  private static boolean hasErrors(GetRateLimitsResp answer) {
    return answer.getResponsesList().stream().anyMatch(r -> !r.getError().isEmpty());
  }

  private ChannelCredentials credentials(
      String name, CertificateAuthority issuer, List<String> names) throws Exception {
    CertificateAuthority.Identity identity = issuer.issue(name, names, YEAR);
    Path cert = dir.resolve(name + "-cert.pem");
    Path key = dir.resolve(name + "-key.pem");
    Files.writeString(cert, Pem.encode((Object[]) identity.chain()));
    Files.writeString(key, Pem.encode(identity.key()));
    return TlsChannelCredentials.newBuilder()
        .keyManager(cert.toFile(), key.toFile())
        .trustManager(dir.resolve("ca.pem").toFile())
        .build();
  }

  private static void assertRefused(ThrowingRunnable call, Code code) {
    assertThatThrownBy(call::run)
        .isInstanceOfSatisfying(
            StatusRuntimeException.class, e -> assertThat(e.getStatus().getCode()).isEqualTo(code));
  }

  private interface ThrowingRunnable {
    void run() throws Exception;
  }

  private static AnnounceReq leaving(int grpcPort) {
    return AnnounceReq.newBuilder().setAddress("127.0.0.1:" + grpcPort).setLeaving(true).build();
  }

  @Test
  void mutualTls_membersForwardToEachOther_onlyMembersReachThePeerListener() throws Exception {
    CertificateAuthority ca = CertificateAuthority.create("cluster-ca", YEAR);
    Files.writeString(dir.resolve("ca.pem"), Pem.encode(ca.certificate()));
    int portA = FreePorts.next();
    int portB = FreePorts.next();
    int peerA = FreePorts.next();
    int peerB = FreePorts.next();
    List<String> peers =
        List.of("127.0.0.1:" + portA + "@" + peerA, "127.0.0.1:" + portB + "@" + peerB);
    WeirNode b = node(portB, peerB, peers, files("b", ca));
    WeirNode a = node(portA, peerA, peers, files("a", ca));
    V1Grpc.V1BlockingStub stub =
        V1Grpc.newBlockingStub(channel(portA, a.tlsIdentity().orElseThrow().peerCredentials()));
    // B is up before A joins; retry while A's ring and its TLS connection to B settle.
    GetRateLimitsResp answer = check(stub, 0);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    for (int attempt = 1;
        (hasErrors(answer) || !forwarded(a)) && System.nanoTime() < deadline;
        attempt++) {
      Thread.sleep(100);
      answer = check(stub, attempt);
    }

    assertThat(answer.getResponsesList()).extracting(RateLimitResp::getError).containsOnly("");
    assertThat(answer.getResponsesList()).extracting(RateLimitResp::getRemaining).containsOnly(4L);
    assertThat(a.cluster().peers().clients())
        .anySatisfy(client -> assertThat(client.itemsSent()).isPositive());
    assertThat(b.peerPort()).hasValue(peerB);
    // B found A down while A was still starting; A's return notice or B's next probe brings it back.
    Await.until(
        Duration.ofSeconds(20),
        () -> b.cluster().membership().ring().peers().size() == 2,
        "A back on B's ring");

    ChannelCredentials stranger =
        credentials("stranger", CertificateAuthority.create("rogue-ca", YEAR), HOSTS);
    ChannelCredentials anonymous =
        TlsChannelCredentials.newBuilder().trustManager(dir.resolve("ca.pem").toFile()).build();
    ChannelCredentials sidecar =
        credentials("envoy", ca, List.of("spiffe://cluster.local/ns/default/sa/envoy"));
    for (ChannelCredentials refused : List.of(stranger, anonymous)) {
      assertRefused(
          () ->
              PeersV1Grpc.newBlockingStub(channel(peerB, refused))
                  .withDeadlineAfter(10, TimeUnit.SECONDS)
                  .announce(leaving(portA)),
          Code.UNAVAILABLE);
    }
    assertRefused(
        () ->
            PeersV1Grpc.newBlockingStub(channel(peerB, sidecar))
                .withDeadlineAfter(10, TimeUnit.SECONDS)
                .announce(leaving(portA)),
        Code.PERMISSION_DENIED);
    assertRefused(
        () ->
            PeersV1Grpc.newBlockingStub(channel(portB, sidecar))
                .withDeadlineAfter(10, TimeUnit.SECONDS)
                .announce(leaving(portA)),
        Code.UNIMPLEMENTED);
    assertThat(b.cluster().membership().ring().peers()).hasSize(2);
  }

  /**
   * Members sharing a certificate that names no address, only the DNS name of their headless
   * service (as one Kubernetes Secret for every pod): called by IP, a peer's certificate fails
   * verification; with {@code WEIR_PEER_TLS_SERVER_NAME} set to that name, members forward.
   */
  @Test
  void sharedDnsOnlyCertificate_peersVerifiedByServerNameNotByTheIpCalled() throws Exception {
    CertificateAuthority ca = CertificateAuthority.create("cluster-ca", YEAR);
    Files.writeString(dir.resolve("ca.pem"), Pem.encode(ca.certificate()));
    TlsSettings shared = files("shared", ca, List.of(SERVER_NAME));
    int portA = FreePorts.next();
    int portB = FreePorts.next();
    int peerA = FreePorts.next();
    int peerB = FreePorts.next();
    List<String> peers =
        List.of("127.0.0.1:" + portA + "@" + peerA, "127.0.0.1:" + portB + "@" + peerB);
    WeirNode b = node(portB, peerB, peers, shared, Optional.of(SERVER_NAME));
    WeirNode a = node(portA, peerA, peers, shared, Optional.of(SERVER_NAME));

    PeerSecurity byAddress = PeerSecurity.mutualTls(a.tlsIdentity().orElseThrow(), null);
    ManagedChannel byIp = byAddress.channel("127.0.0.1:" + peerB);
    resources.add(() -> byIp.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    assertThatThrownBy(
            () ->
                PeersV1Grpc.newBlockingStub(byIp)
                    .withDeadlineAfter(10, TimeUnit.SECONDS)
                    .getPeerRateLimits(GetPeerRateLimitsReq.getDefaultInstance()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getCode()).isEqualTo(Code.UNAVAILABLE))
        .hasRootCauseInstanceOf(CertificateException.class)
        .rootCause()
        .hasMessageContaining("127.0.0.1");
    ManagedChannel byName = byAddress.withServerName(SERVER_NAME).channel("127.0.0.1:" + peerB);
    resources.add(() -> byName.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    assertThat(
            PeersV1Grpc.newBlockingStub(byName)
                .withDeadlineAfter(10, TimeUnit.SECONDS)
                .getPeerRateLimits(GetPeerRateLimitsReq.getDefaultInstance())
                .getRateLimitsList())
        .isEmpty();

    ManagedChannel client =
        Grpc.newChannelBuilderForAddress(
                "127.0.0.1", portA, a.tlsIdentity().orElseThrow().peerCredentials())
            .overrideAuthority(SERVER_NAME)
            .build();
    resources.add(() -> client.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    V1Grpc.V1BlockingStub stub = V1Grpc.newBlockingStub(client);
    GetRateLimitsResp answer = check(stub, 0);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    for (int attempt = 1;
        (hasErrors(answer) || !forwarded(a)) && System.nanoTime() < deadline;
        attempt++) {
      Thread.sleep(100);
      answer = check(stub, attempt);
    }
    assertThat(answer.getResponsesList()).extracting(RateLimitResp::getError).containsOnly("");
    assertThat(answer.getResponsesList()).extracting(RateLimitResp::getRemaining).containsOnly(4L);
    assertThat(forwarded(a)).isTrue();
    assertThat(b.peerPort()).hasValue(peerB);
  }
}
