package dev.weir.tls;

import static io.grpc.MethodDescriptor.MethodType.UNARY;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.cluster.peer.PeerHandler;
import dev.weir.core.cluster.peer.PeerListener;
import dev.weir.core.cluster.peer.PeersService;
import dev.weir.core.cluster.peer.auth.PeerIdentities;
import dev.weir.core.cluster.peer.auth.PeerSecret;
import dev.weir.core.cluster.peer.auth.PeerSecurity;
import dev.weir.core.cluster.peer.auth.PeerTls;
import dev.weir.core.quota.QuotaPush;
import dev.weir.core.quota.QuotaShare;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.IdlePeerHandler;
import dev.weir.core.testkit.RawGrpc;
import dev.weir.core.testkit.RecordingMetrics;
import dev.weir.proto.gubernator.AnnounceReq;
import dev.weir.proto.gubernator.PeersV1Grpc;
import dev.weir.proto.gubernator.PushQuotaSharesReq;
import dev.weir.proto.gubernator.QuotaUsage;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.ReportQuotaUsageReq;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import io.grpc.stub.MetadataUtils;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import javax.net.ssl.KeyManager;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real peer listener on loopback under each {@link PeerSecurity}: only members get through to the
 * handler, strangers are refused with the right code and counted.
 */
class PeerListenerSecurityTest {

  private static final Duration DAY = Duration.ofDays(1);
  private static final String WEIR_SPIFFE = "spiffe://cluster.local/ns/weir/sa/weir";
  private static final String ENVOY_SPIFFE = "spiffe://cluster.local/ns/default/sa/envoy";
  private static final String SECRET = "peer-secret-of-the-test";

  @TempDir Path dir;
  private final List<String> notices = new CopyOnWriteArrayList<>();
  private final RecordingMetrics metrics = new RecordingMetrics();
  private final List<AutoCloseable> resources = new ArrayList<>();
  private CertificateAuthority ca;

  @BeforeEach
  void createCa() throws Exception {
    ca = CertificateAuthority.create("cluster-ca", DAY);
    Files.writeString(dir.resolve("ca.pem"), Pem.encode(ca.certificate()));
  }

  @AfterEach
  void close() throws Exception {
    for (int i = resources.size() - 1; i >= 0; i--) {
      resources.get(i).close();
    }
  }

  private volatile int quotaCalls;

  private final PeerHandler handler =
      new IdlePeerHandler() {

        @Override
        public CompletableFuture<Void> announce(String address, boolean leaving) {
          notices.add(address);
          return CompletableFuture.completedFuture(null);
        }

        @Override
        public List<QuotaShare> reportQuota(List<dev.weir.core.quota.QuotaUsage> usages) {
          quotaCalls++;
          return List.of();
        }

        @Override
        public int deliverQuotaShares(List<QuotaPush> pushes) {
          quotaCalls++;
          return 0;
        }
      };

  private int listen(PeerSecurity security) throws Exception {
    PeerListener listener =
        PeerListener.start(
            new InetSocketAddress("127.0.0.1", 0),
            new PeersService(handler, new FakeClock()),
            security,
            metrics,
            4 << 20);
    resources.add(listener);
    return listener.port();
  }

  private TlsIdentity identity(String name, CertificateAuthority issuer, List<String> names)
      throws Exception {
    CertificateAuthority.Identity issued = issuer.issue(name, names, DAY);
    Path cert = dir.resolve(name + "-cert.pem");
    Path key = dir.resolve(name + "-key.pem");
    Files.writeString(cert, Pem.encode((Object[]) issued.chain()));
    Files.writeString(key, Pem.encode(issued.key()));
    TlsSettings settings =
        new TlsSettings(
            Optional.of(cert),
            Optional.of(key),
            Optional.of(dir.resolve("ca.pem")),
            ClientAuth.NONE,
            "TLSv1.3",
            false,
            Duration.ofSeconds(10));
    return TlsIdentity.load(settings, List.of());
  }

  private TlsIdentity member(String name, String spiffe) throws Exception {
    return identity(name, ca, List.of("localhost", "127.0.0.1", spiffe));
  }

  /** Sends Announce(leaving) for 10.0.0.2:1051 over {@code credentials} with {@code headers}. */
  private void announce(int port, ChannelCredentials credentials, Metadata headers) {
    ManagedChannel channel =
        Grpc.newChannelBuilderForAddress("localhost", port, credentials).build();
    resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    PeersV1Grpc.newBlockingStub(channel)
        .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers))
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .announce(AnnounceReq.newBuilder().setAddress("10.0.0.2:1051").setLeaving(true).build());
  }

  private static Metadata secret(String value) {
    Metadata headers = new Metadata();
    if (value != null) {
      headers.put(PeerSecret.HEADER, value);
    }
    return headers;
  }

  private static void assertRefused(Runnable call, Code code) {
    assertThatThrownBy(call::run)
        .isInstanceOfSatisfying(
            StatusRuntimeException.class, e -> assertThat(e.getStatus().getCode()).isEqualTo(code));
  }

  @Test
  void sharedSecret_missingOrWrong_unauthenticatedAndNoticeNeverHandled() throws Exception {
    int port = listen(PeerSecurity.sharedSecret(PeerSecret.of(SECRET)));
    ChannelCredentials plaintext = InsecureChannelCredentials.create();

    assertRefused(() -> announce(port, plaintext, secret(null)), Code.UNAUTHENTICATED);
    assertRefused(
        () -> announce(port, plaintext, secret("not-the-secret-at-all")), Code.UNAUTHENTICATED);
    assertThat(notices).isEmpty();
    announce(port, plaintext, secret(SECRET));

    assertThat(notices).containsExactly("10.0.0.2:1051");
    assertThat(metrics.count("refused peer_unauthenticated")).isEqualTo(2);
  }

  @Test
  void sharedSecret_quotaMethodsWithoutIt_unauthenticatedAndNeverHandled() throws Exception {
    int port = listen(PeerSecurity.sharedSecret(PeerSecret.of(SECRET)));
    ManagedChannel channel =
        Grpc.newChannelBuilder("127.0.0.1:" + port, InsecureChannelCredentials.create()).build();
    resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    PeersV1Grpc.PeersV1BlockingStub stub =
        PeersV1Grpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);

    assertRefused(
        () ->
            stub.reportQuotaUsage(
                ReportQuotaUsageReq.newBuilder()
                    .addUsages(
                        QuotaUsage.newBuilder()
                            .setRule(
                                RateLimitReq.newBuilder()
                                    .setName("n")
                                    .setUniqueKey("k")
                                    .setLimit(1)
                                    .setDuration(1000))
                            .setClient("10.0.0.2:1051/1.1")
                            .setIntervalMs(5000))
                    .build()),
        Code.UNAUTHENTICATED);
    assertRefused(
        () -> stub.pushQuotaShares(PushQuotaSharesReq.getDefaultInstance()), Code.UNAUTHENTICATED);
    assertThat(quotaCalls).isZero();
    assertThat(metrics.count("refused peer_unauthenticated")).isEqualTo(2);
  }

  @Test
  void sharedSecret_unparseableMessages_invalidArgumentForMembersUnauthenticatedForStrangers()
      throws Exception {
    int port = listen(PeerSecurity.sharedSecret(PeerSecret.of(SECRET)));
    ManagedChannel channel =
        Grpc.newChannelBuilderForAddress("localhost", port, InsecureChannelCredentials.create())
            .build();
    resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    byte[] truncated = {0x0a, 0x7f, 'x'};

    for (String method :
        List.of("GetPeerRateLimits", "UpdatePeerGlobals", "TransferBuckets", "Announce")) {
      String name = PeersV1Grpc.SERVICE_NAME + "/" + method;
      io.grpc.Status member = RawGrpc.call(channel, name, UNARY, truncated, secret(SECRET));
      io.grpc.Status stranger = RawGrpc.call(channel, name, UNARY, truncated, secret(null));

      assertThat(member.getCode()).as(method).isEqualTo(Code.INVALID_ARGUMENT);
      assertThat(member.getDescription())
          .as(method)
          .startsWith("request is not a valid pb.gubernator.")
          .contains("input ended unexpectedly");
      assertThat(stranger.getCode()).as(method).isEqualTo(Code.UNAUTHENTICATED);
    }
    assertThat(notices).isEmpty();
  }

  @Test
  void sharedSecret_memberChannel_sendsTheSecret() throws Exception {
    PeerSecurity security = PeerSecurity.sharedSecret(PeerSecret.of(SECRET));
    int port = listen(security);
    ManagedChannel channel = security.channel("127.0.0.1:" + port);
    resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));

    PeersV1Grpc.newBlockingStub(channel)
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .announce(AnnounceReq.newBuilder().setAddress("10.0.0.3:1051").build());

    assertThat(notices).containsExactly("10.0.0.3:1051");
  }

  @Test
  void mutualTls_defaultAllowList_memberWithSameNamesAdmittedSidecarOfSameCaDenied()
      throws Exception {
    TlsIdentity node = member("node", WEIR_SPIFFE);
    int port = listen(PeerSecurity.mutualTls(node, null));
    TlsIdentity sameNames = member("other-node", WEIR_SPIFFE);
    TlsIdentity sidecar = identity("envoy", ca, List.of(ENVOY_SPIFFE));

    announce(port, sameNames.peerCredentials(), new Metadata());
    assertRefused(
        () -> announce(port, sidecar.peerCredentials(), new Metadata()), Code.PERMISSION_DENIED);

    assertThat(notices).containsExactly("10.0.0.2:1051");
    assertThat(metrics.count("refused peer_not_allowed")).isEqualTo(1);
  }

  /** Rewrites the files of {@link #identity} {@code name} with a certificate for {@code names}. */
  private void reissue(String name, String commonName, List<String> names) throws Exception {
    CertificateAuthority.Identity issued = ca.issue(commonName, names, DAY);
    Path cert = dir.resolve(name + "-cert.pem");
    Path key = dir.resolve(name + "-key.pem");
    Files.writeString(cert, Pem.encode((Object[]) issued.chain()));
    Files.writeString(key, Pem.encode(issued.key()));
    FileTime later = FileTime.from(Instant.now().plusSeconds(10));
    Files.setLastModifiedTime(cert, later);
    Files.setLastModifiedTime(key, later);
  }

  @Test
  void mutualTls_defaultAllowList_reloadedCertificateWithoutNamesRefusedAndMembersStillAdmitted()
      throws Exception {
    TlsIdentity node = member("node", WEIR_SPIFFE);
    int port = listen(PeerSecurity.mutualTls(node, null));
    TlsIdentity sameNames = member("other-node", WEIR_SPIFFE);
    reissue("node", "node-2", List.of());

    TlsReload reload = node.reload();

    assertThat(reload.certificateReloaded()).isFalse();
    assertThat(reload.failures())
        .singleElement()
        .asString()
        .contains(dir.resolve("node-cert.pem").toString())
        .contains("CN=node-2")
        .contains("no DNS, URI or IP subject alternative name")
        .endsWith("use a certificate with a DNS, URI or IP subject alternative name");
    assertThat(node.chain()[0].getSubjectX500Principal().getName()).isEqualTo("CN=node");
    announce(port, sameNames.peerCredentials(), new Metadata());
    assertThat(notices).containsExactly("10.0.0.2:1051");
  }

  @Test
  void mutualTls_givenAllowList_reloadedCertificateWithoutNamesRefused() throws Exception {
    TlsIdentity node = member("node", WEIR_SPIFFE);
    listen(PeerSecurity.mutualTls(node, PeerIdentities.of(List.of(WEIR_SPIFFE))));
    reissue("node", "node-2", List.of());

    TlsReload reload = node.reload();

    assertThat(reload.certificateReloaded()).isFalse();
    assertThat(reload.failures())
        .singleElement()
        .asString()
        .contains("CN=node-2")
        .contains("no DNS, URI or IP subject alternative name");
    assertThat(node.chain()[0].getSubjectX500Principal().getName()).isEqualTo("CN=node");
  }

  @Test
  void mutualTls_givenAllowList_certificateWithoutNamesRefused() throws Exception {
    TlsIdentity bare = identity("bare", ca, List.of());

    assertThatThrownBy(
            () -> PeerSecurity.mutualTls(bare, PeerIdentities.of(List.of(WEIR_SPIFFE))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "this node's certificate (CN=bare) has no DNS, URI or IP subject alternative name,"
                + " the names peers allow the node calling them by, whatever their allow-list, so"
                + " every peer would refuse this node's calls; use a certificate with a DNS, URI or"
                + " IP subject alternative name");
  }

  @Test
  void mutualTls_defaultAllowList_ownCertificateChangedToOneWithoutNames_previousNamesStillAllowed()
      throws Exception {
    TlsIdentity node = member("node", WEIR_SPIFFE);
    AtomicReference<X509Certificate> own = new AtomicReference<>(node.chain()[0]);
    PeerTls embedded =
        new PeerTls() {
          @Override
          public X509Certificate[] chain() {
            return new X509Certificate[] {own.get()};
          }

          @Override
          public io.grpc.netty.shaded.io.netty.handler.ssl.SslContext peerServerContext()
              throws java.io.IOException {
            return node.peerServerContext();
          }

          @Override
          public ChannelCredentials peerCredentials() {
            return node.peerCredentials();
          }
        };
    int port = listen(PeerSecurity.mutualTls(embedded, null));
    TlsIdentity sameNames = member("other-node", WEIR_SPIFFE);
    TlsIdentity sidecar = identity("envoy", ca, List.of(ENVOY_SPIFFE));
    own.set(ca.issue("node-2", List.of(), DAY).chain()[0]);

    announce(port, sameNames.peerCredentials(), new Metadata());
    assertRefused(
        () -> announce(port, sidecar.peerCredentials(), new Metadata()), Code.PERMISSION_DENIED);

    assertThat(notices).containsExactly("10.0.0.2:1051");
  }

  @Test
  void mutualTls_allowListWithWildcard_admitsServiceAccountsOfTheNamespaceOnly() throws Exception {
    TlsIdentity node = member("node", WEIR_SPIFFE);
    int port =
        listen(
            PeerSecurity.mutualTls(
                node, PeerIdentities.of(List.of("spiffe://cluster.local/ns/weir/sa/*"))));
    TlsIdentity second = member("second", "spiffe://cluster.local/ns/weir/sa/weir-canary");
    TlsIdentity sidecar = identity("envoy", ca, List.of(ENVOY_SPIFFE));

    announce(port, second.peerCredentials(), new Metadata());
    assertRefused(
        () -> announce(port, sidecar.peerCredentials(), new Metadata()), Code.PERMISSION_DENIED);

    assertThat(notices).hasSize(1);
  }

  @Test
  void mutualTls_noClientCertificateOrOtherCaOrPlaintext_neverReachesTheHandler() throws Exception {
    TlsIdentity node = member("node", WEIR_SPIFFE);
    int port = listen(PeerSecurity.mutualTls(node, null));
    ChannelCredentials trustOnly =
        TlsChannelCredentials.newBuilder().trustManager(dir.resolve("ca.pem").toFile()).build();
    CertificateAuthority rogue = CertificateAuthority.create("rogue-ca", DAY);
    TlsIdentity stranger = identity("stranger", rogue, List.of("localhost", WEIR_SPIFFE));

    assertRefused(() -> announce(port, trustOnly, new Metadata()), Code.UNAVAILABLE);
    assertRefused(
        () -> announce(port, stranger.peerCredentials(), new Metadata()), Code.UNAVAILABLE);
    assertRefused(
        () -> announce(port, InsecureChannelCredentials.create(), new Metadata()),
        Code.UNAVAILABLE);

    assertThat(notices).isEmpty();
  }

  @Test
  void mutualTls_caFileRewrittenWithoutOldCa_resumingPeerOfOldCaRefusedAfterReload()
      throws Exception {
    TlsIdentity node = member("node", WEIR_SPIFFE);
    int port = listen(PeerSecurity.mutualTls(node, null));
    CertificateAuthority.Identity old =
        ca.issue("old-node", List.of("localhost", "127.0.0.1", WEIR_SPIFFE), DAY);
    SSLContext oldPeer = SSLContext.getInstance("TLS");
    oldPeer.init(
        new KeyManager[] {KeyManagers.keyManager(old.key(), old.chain())},
        new TrustManager[] {KeyManagers.trustManager(new X509Certificate[] {ca.certificate()})},
        null);
    assertThat(H2Preface.answered(port, oldPeer)).isTrue();

    Path caFile = dir.resolve("ca.pem");
    FileTime before = Files.getLastModifiedTime(caFile);
    Files.writeString(caFile, Pem.encode(CertificateAuthority.create("next-ca", DAY).certificate()));
    Files.setLastModifiedTime(caFile, FileTime.from(before.toInstant().plusSeconds(10)));
    assertThat(node.reload().casReloaded()).isTrue();

    assertThat(H2Preface.answered(port, oldPeer)).isFalse();
  }

  @Test
  void mutualTlsAndSecret_certificateAloneNotEnough() throws Exception {
    TlsIdentity node = member("node", WEIR_SPIFFE);
    PeerSecurity security = PeerSecurity.mutualTls(node, null).withSecret(PeerSecret.of(SECRET));
    int port = listen(security);

    assertRefused(
        () -> announce(port, node.peerCredentials(), new Metadata()), Code.UNAUTHENTICATED);
    ManagedChannel channel = security.channel("localhost:" + port);
    resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    PeersV1Grpc.newBlockingStub(channel)
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .announce(AnnounceReq.newBuilder().setAddress("10.0.0.4:1051").build());

    assertThat(notices).containsExactly("10.0.0.4:1051");
  }

  @Test
  void describe_namesTheMechanismNeverTheSecret() throws Exception {
    TlsIdentity node = member("node", WEIR_SPIFFE);

    assertThat(PeerSecurity.sharedSecret(PeerSecret.of(SECRET)).describe())
        .isEqualTo("shared secret");
    assertThat(PeerSecurity.mutualTls(node, null).describe())
        .startsWith("mutual TLS, allowed identities of this node's certificate")
        .contains(WEIR_SPIFFE);
    assertThat(PeerSecurity.insecure().describe()).startsWith("none");
    assertThat(PeerSecurity.insecure().authenticated()).isFalse();
  }
}
