package dev.weir.tls;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.http.HttpAnswer;
import dev.weir.http.HttpListener;
import dev.weir.http.HttpRoute;
import dev.weir.proto.gubernator.LiveCheckReq;
import dev.weir.proto.gubernator.LiveCheckResp;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.net.InetSocketAddress;
import java.io.IOException;
import java.nio.file.Files;
import java.security.GeneralSecurityException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TlsIdentityTest {

  private static final List<String> HOSTS = List.of("localhost", "127.0.0.1");
  private static final Duration YEAR = Duration.ofDays(365);

  @TempDir Path dir;
  private CertificateAuthority ca;
  private final List<AutoCloseable> resources = new ArrayList<>();

  @BeforeEach
  void createCa() throws Exception {
    ca = CertificateAuthority.create("test-ca", YEAR);
    Files.writeString(dir.resolve("ca.pem"), Pem.encode(ca.certificate()));
  }

  @AfterEach
  void close() throws Exception {
    for (AutoCloseable resource : resources) {
      resource.close();
    }
  }

  private TlsSettings write(String name, CertificateAuthority issuer, ClientAuth auth)
      throws Exception {
    CertificateAuthority.Identity identity = issuer.issue(name, HOSTS, YEAR);
    Path cert = dir.resolve(name + "-cert.pem");
    Path key = dir.resolve(name + "-key.pem");
    Files.writeString(cert, Pem.encode((Object[]) identity.chain()));
    Files.writeString(key, Pem.encode(identity.key()));
    return new TlsSettings(
        Optional.of(cert), Optional.of(key), Optional.of(dir.resolve("ca.pem")), auth, "TLSv1.3",
        false, Duration.ofSeconds(10));
  }

  private int grpcServer(TlsIdentity identity) throws Exception {
    V1Grpc.V1ImplBase service =
        new V1Grpc.V1ImplBase() {
          @Override
          public void liveCheck(LiveCheckReq request, StreamObserver<LiveCheckResp> observer) {
            observer.onNext(LiveCheckResp.getDefaultInstance());
            observer.onCompleted();
          }
        };
    Server server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .sslContext(identity.grpcServerContext())
            .addService(service)
            .build()
            .start();
    resources.add(() -> server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    return server.getPort();
  }

  private LiveCheckResp liveCheck(int port, ChannelCredentials credentials) {
    ManagedChannel channel =
        Grpc.newChannelBuilderForAddress("localhost", port, credentials).build();
    resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    return V1Grpc.newBlockingStub(channel)
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .liveCheck(LiveCheckReq.getDefaultInstance());
  }

  private ChannelCredentials trustOnly() throws Exception {
    return TlsChannelCredentials.newBuilder().trustManager(dir.resolve("ca.pem").toFile()).build();
  }

  @Test
  void grpc_tlsServer_clientTrustingCaConnects() throws Exception {
    int port = grpcServer(TlsIdentity.load(write("server", ca, ClientAuth.NONE), HOSTS));

    assertThat(liveCheck(port, trustOnly())).isEqualTo(LiveCheckResp.getDefaultInstance());
  }

  @Test
  void grpc_mutualTls_peerWithCertificateFromCaAccepted() throws Exception {
    int port =
        grpcServer(TlsIdentity.load(write("server", ca, ClientAuth.REQUIRE_AND_VERIFY), HOSTS));
    TlsIdentity peer = TlsIdentity.load(write("peer", ca, ClientAuth.REQUIRE_AND_VERIFY), HOSTS);

    assertThat(liveCheck(port, peer.peerCredentials())).isEqualTo(LiveCheckResp.getDefaultInstance());
  }

  @Test
  void grpc_mutualTls_clientWithoutCertificateRefused() throws Exception {
    int port =
        grpcServer(TlsIdentity.load(write("server", ca, ClientAuth.REQUIRE_AND_VERIFY), HOSTS));

    assertThatThrownBy(() -> liveCheck(port, trustOnly()))
        .isInstanceOf(StatusRuntimeException.class)
        .hasMessageStartingWith("UNAVAILABLE");
  }

  @Test
  void grpc_mutualTls_certificateFromAnotherCaRefused() throws Exception {
    int port =
        grpcServer(TlsIdentity.load(write("server", ca, ClientAuth.REQUIRE_AND_VERIFY), HOSTS));
    CertificateAuthority rogue = CertificateAuthority.create("rogue", YEAR);
    TlsSettings rogueSettings = write("rogue", rogue, ClientAuth.NONE);
    CertificateAuthority.Identity rogueIdentity =
        new CertificateAuthority.Identity(
            Pem.privateKey(rogueSettings.key().get()), Pem.certificates(rogueSettings.cert().get()));
    ChannelCredentials credentials =
        TlsChannelCredentials.newBuilder()
            .keyManager(KeyManagers.keyManager(rogueIdentity.key(), rogueIdentity.chain()))
            .trustManager(dir.resolve("ca.pem").toFile())
            .build();

    assertThatThrownBy(() -> liveCheck(port, credentials))
        .isInstanceOf(StatusRuntimeException.class)
        .hasMessageStartingWith("UNAVAILABLE");
  }

  private HttpListener https(TlsIdentity identity) throws Exception {
    HttpRoute ok =
        HttpRoute.get("/ok", call -> HttpAnswer.json(200, "{}").completed());
    HttpListener listener =
        HttpListener.builder(new InetSocketAddress("127.0.0.1", 0))
            .routes(List.of(ok))
            .tls(identity.httpsEngines())
            .start();
    resources.add(() -> listener.stop(Duration.ZERO));
    return listener;
  }

  private X509Certificate handshake(int port, SSLContext client) throws Exception {
    try (SSLSocket socket = (SSLSocket) client.getSocketFactory().createSocket("127.0.0.1", port)) {
      socket.startHandshake();
      socket.getOutputStream().write("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n".getBytes());
      socket.getOutputStream().flush();
      assertThat(new String(socket.getInputStream().readNBytes(12))).isEqualTo("HTTP/1.1 200");
      return (X509Certificate) socket.getSession().getPeerCertificates()[0];
    }
  }

  private SSLContext trustingCa() throws Exception {
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(
        null,
        new javax.net.ssl.TrustManager[] {KeyManagers.trustManager(new X509Certificate[] {ca.certificate()})},
        null);
    return context;
  }

  @Test
  void https_certificateFilesReplaced_newHandshakesPresentNewCertificate() throws Exception {
    TlsSettings settings = write("server", ca, ClientAuth.NONE);
    TlsIdentity identity = TlsIdentity.load(settings, HOSTS);
    HttpListener listener = https(identity);
    X509Certificate before = handshake(listener.port(), trustingCa());

    assertThat(identity.reloadIfChanged()).isFalse();
    CertificateAuthority.Identity next = ca.issue("server-2", HOSTS, YEAR);
    Files.writeString(settings.cert().get(), Pem.encode((Object[]) next.chain()));
    Files.writeString(settings.key().get(), Pem.encode(next.key()));
    FileTime later = FileTime.from(Instant.now().plusSeconds(10));
    Files.setLastModifiedTime(settings.cert().get(), later);
    Files.setLastModifiedTime(settings.key().get(), later);
    assertThat(identity.reloadIfChanged()).isTrue();
    X509Certificate after = handshake(listener.port(), trustingCa());

    assertThat(before.getSubjectX500Principal().getName()).isEqualTo("CN=server");
    assertThat(after.getSubjectX500Principal().getName()).isEqualTo("CN=server-2");
    assertThat(identity.reloadIfChanged()).isFalse();
  }

  @Test
  void https_brokenReplacementFile_previousIdentityKept() throws Exception {
    TlsSettings settings = write("server", ca, ClientAuth.NONE);
    TlsIdentity identity = TlsIdentity.load(settings, HOSTS);
    HttpListener listener = https(identity);
    Files.writeString(settings.cert().get(), "not a certificate");
    Files.setLastModifiedTime(settings.cert().get(), FileTime.from(Instant.now().plusSeconds(10)));

    assertThatThrownBy(identity::reloadIfChanged).hasMessageContaining("no PEM certificate");
    assertThat(handshake(listener.port(), trustingCa()).getSubjectX500Principal().getName())
        .isEqualTo("CN=server");
  }

  @Test
  void https_certificateRewrittenBeforeItsKey_previousIdentityKeptUntilTheKeyFollows()
      throws Exception {
    TlsSettings settings = write("server", ca, ClientAuth.NONE);
    TlsIdentity identity = TlsIdentity.load(settings, HOSTS);
    HttpListener listener = https(identity);
    CertificateAuthority.Identity next = ca.issue("server-2", HOSTS, YEAR);
    Files.writeString(settings.cert().get(), Pem.encode((Object[]) next.chain()));
    Files.setLastModifiedTime(settings.cert().get(), FileTime.from(Instant.now().plusSeconds(10)));

    assertThatThrownBy(identity::reloadIfChanged)
        .hasMessageContaining("server-key.pem")
        .hasMessageContaining("does not hold the private key of the first certificate in")
        .hasMessageContaining("server-cert.pem");
    assertThat(handshake(listener.port(), trustingCa()).getSubjectX500Principal().getName())
        .isEqualTo("CN=server");

    Files.writeString(settings.key().get(), Pem.encode(next.key()));
    Files.setLastModifiedTime(settings.key().get(), FileTime.from(Instant.now().plusSeconds(20)));
    assertThat(identity.reloadIfChanged()).isTrue();
    assertThat(handshake(listener.port(), trustingCa()).getSubjectX500Principal().getName())
        .isEqualTo("CN=server-2");
  }

  @Test
  void load_keyOfAnotherCertificate_refusedNamingBothFiles() throws Exception {
    TlsSettings settings = write("server", ca, ClientAuth.NONE);
    Files.writeString(settings.key().get(), Pem.encode(ca.issue("other", HOSTS, YEAR).key()));

    assertThatThrownBy(() -> TlsIdentity.load(settings, HOSTS))
        .isInstanceOf(GeneralSecurityException.class)
        .hasMessageContaining("server-key.pem")
        .hasMessageContaining("server-cert.pem");
  }

  @Test
  void reload_certificateWithBadBase64AndRewrittenCa_caReloadedAndFailureNamesTheFile()
      throws Exception {
    TlsSettings settings = write("server", ca, ClientAuth.REQUIRE_AND_VERIFY);
    TlsIdentity identity = TlsIdentity.load(settings, HOSTS);
    CertificateAuthority next = CertificateAuthority.create("next-ca", YEAR);
    Files.writeString(
        settings.cert().get(),
        "-----BEGIN CERTIFICATE-----\nMIIB*not*base64\n-----END CERTIFICATE-----\n");
    Files.setLastModifiedTime(settings.cert().get(), FileTime.from(Instant.now().plusSeconds(10)));
    rewriteCaFile(Pem.encode(next.certificate()));

    TlsReload reload = identity.reload();

    assertThat(reload.casReloaded()).isTrue();
    assertThat(reload.failures())
        .singleElement()
        .asString()
        .contains("server-cert.pem")
        .contains("not valid PEM");
    assertThat(identity.chain()[0].getSubjectX500Principal().getName()).isEqualTo("CN=server");
  }

  @Test
  void load_missingCertificateFile_errorNamesTheFile() throws Exception {
    TlsSettings settings = write("server", ca, ClientAuth.NONE);
    Files.delete(settings.cert().get());

    assertThatThrownBy(() -> TlsIdentity.load(settings, HOSTS))
        .isInstanceOf(IOException.class)
        .hasMessage(settings.cert().get() + ": no such file");
  }

  @Test
  void https_requireClientCertificate_clientWithoutOneRefused() throws Exception {
    HttpListener listener =
        https(TlsIdentity.load(write("server", ca, ClientAuth.REQUIRE_AND_VERIFY), HOSTS));

    String answer;
    try (SSLSocket socket =
        (SSLSocket) trustingCa().getSocketFactory().createSocket("127.0.0.1", listener.port())) {
      socket.startHandshake();
      socket.getOutputStream().write("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n".getBytes());
      socket.getOutputStream().flush();
      answer = new String(socket.getInputStream().readNBytes(12));
    } catch (SSLException | java.net.SocketException refused) {
      answer = "";
    }

    assertThat(answer).as("TLS 1.3 may report the refusal as a closed stream").isEmpty();
  }

  @Test
  void auto_generatedIdentity_trustedByItsOwnPeerCredentials() throws Exception {
    TlsSettings auto =
        new TlsSettings(
            Optional.empty(), Optional.empty(), Optional.empty(), ClientAuth.REQUIRE_AND_VERIFY,
            "TLSv1.3", true, Duration.ofSeconds(10));
    TlsIdentity identity = TlsIdentity.load(auto, HOSTS);
    int port = grpcServer(identity);

    assertThat(liveCheck(port, identity.peerCredentials())).isEqualTo(LiveCheckResp.getDefaultInstance());
    assertThat(identity.reloadIfChanged()).isFalse();
  }
  private SSLContext clientOf(CertificateAuthority.Identity identity) throws Exception {
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(
        new javax.net.ssl.KeyManager[] {KeyManagers.keyManager(identity.key(), identity.chain())},
        new javax.net.ssl.TrustManager[] {
          KeyManagers.trustManager(new X509Certificate[] {ca.certificate()})
        },
        null);
    return context;
  }

  /** Returns the status line of {@code GET /ok}, or empty when the handshake was refused. */
  private String statusLine(int port, SSLContext client) throws Exception {
    try (SSLSocket socket = (SSLSocket) client.getSocketFactory().createSocket("127.0.0.1", port)) {
      socket.startHandshake();
      socket.getOutputStream().write("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n".getBytes());
      socket.getOutputStream().flush();
      return new String(socket.getInputStream().readNBytes(12));
    } catch (SSLException | java.net.SocketException refused) {
      return "";
    }
  }

  private void rewriteCaFile(String pem) throws Exception {
    Path file = dir.resolve("ca.pem");
    FileTime before = Files.getLastModifiedTime(file);
    Files.writeString(file, pem);
    Files.setLastModifiedTime(file, FileTime.from(before.toInstant().plusSeconds(10)));
  }

  @Test
  void https_caFileRewritten_clientOfNewCaRefusedBeforeAndAcceptedAfterReload() throws Exception {
    TlsIdentity identity =
        TlsIdentity.load(write("server", ca, ClientAuth.REQUIRE_AND_VERIFY), HOSTS);
    HttpListener listener = https(identity);
    CertificateAuthority next = CertificateAuthority.create("next-ca", YEAR);
    SSLContext nextClient = clientOf(next.issue("client", HOSTS, YEAR));
    SSLContext oldClient = clientOf(ca.issue("old-client", HOSTS, YEAR));

    assertThat(statusLine(listener.port(), nextClient)).isEmpty();
    assertThat(identity.reloadIfChanged()).isFalse();
    rewriteCaFile(Pem.encode(ca.certificate(), next.certificate()));
    assertThat(identity.reloadIfChanged()).isTrue();

    assertThat(statusLine(listener.port(), clientOf(next.issue("client", HOSTS, YEAR))))
        .isEqualTo("HTTP/1.1 200");
    assertThat(statusLine(listener.port(), oldClient)).isEqualTo("HTTP/1.1 200");
    assertThat(identity.trustedCas()).contains(ca.certificate(), next.certificate());
    assertThat(identity.reloadIfChanged()).isFalse();
  }

  @Test
  void https_caFileRewrittenWithoutOldCa_clientOfOldCaRefusedAfterReload() throws Exception {
    TlsIdentity identity =
        TlsIdentity.load(write("server", ca, ClientAuth.REQUIRE_AND_VERIFY), HOSTS);
    HttpListener listener = https(identity);
    assertThat(statusLine(listener.port(), clientOf(ca.issue("old-client", HOSTS, YEAR))))
        .isEqualTo("HTTP/1.1 200");

    rewriteCaFile(Pem.encode(CertificateAuthority.create("next-ca", YEAR).certificate()));
    assertThat(identity.reloadIfChanged()).isTrue();

    assertThat(statusLine(listener.port(), clientOf(ca.issue("old-client-2", HOSTS, YEAR))))
        .isEmpty();
  }

  @Test
  void https_caFileRewrittenWithoutOldCa_resumingClientOfOldCaRefusedAfterReload()
      throws Exception {
    TlsIdentity identity =
        TlsIdentity.load(write("server", ca, ClientAuth.REQUIRE_AND_VERIFY), HOSTS);
    HttpListener listener = https(identity);
    SSLContext oldClient = clientOf(ca.issue("old-client", HOSTS, YEAR));
    assertThat(statusLine(listener.port(), oldClient)).isEqualTo("HTTP/1.1 200");

    rewriteCaFile(Pem.encode(CertificateAuthority.create("next-ca", YEAR).certificate()));
    assertThat(identity.reloadIfChanged()).isTrue();

    assertThat(statusLine(listener.port(), oldClient)).isEmpty();
  }

  @Test
  void grpc_caFileRewrittenWithoutOldCa_resumingPeerOfOldCaRefusedAfterReload()
      throws Exception {
    TlsIdentity identity =
        TlsIdentity.load(write("server", ca, ClientAuth.REQUIRE_AND_VERIFY), HOSTS);
    int port = grpcServer(identity);
    SSLContext oldPeer = clientOf(ca.issue("old-peer", HOSTS, YEAR));
    assertThat(H2Preface.answered(port, oldPeer)).isTrue();

    rewriteCaFile(Pem.encode(CertificateAuthority.create("next-ca", YEAR).certificate()));
    assertThat(identity.reloadIfChanged()).isTrue();

    assertThat(H2Preface.answered(port, oldPeer)).isFalse();
  }

  @Test
  void https_invalidCaFile_previousTrustKeptAndErrorReported() throws Exception {
    TlsIdentity identity =
        TlsIdentity.load(write("server", ca, ClientAuth.REQUIRE_AND_VERIFY), HOSTS);
    HttpListener listener = https(identity);

    rewriteCaFile("not a certificate");

    assertThatThrownBy(identity::reloadIfChanged)
        .isInstanceOf(java.io.IOException.class)
        .hasMessageContaining("ca.pem")
        .hasMessageContaining("no PEM certificate");
    assertThat(statusLine(listener.port(), clientOf(ca.issue("old-client", HOSTS, YEAR))))
        .isEqualTo("HTTP/1.1 200");
    assertThat(identity.trustedCas()).containsExactly(ca.certificate());
  }

  @Test
  void reload_brokenCertificateAndRewrittenCa_caReloadedAndCertificateErrorReported()
      throws Exception {
    TlsSettings settings = write("server", ca, ClientAuth.REQUIRE_AND_VERIFY);
    TlsIdentity identity = TlsIdentity.load(settings, HOSTS);
    CertificateAuthority next = CertificateAuthority.create("next-ca", YEAR);
    Files.writeString(settings.cert().get(), "not a certificate");
    Files.setLastModifiedTime(settings.cert().get(), FileTime.from(Instant.now().plusSeconds(10)));
    rewriteCaFile(Pem.encode(next.certificate()));

    assertThatThrownBy(identity::reloadIfChanged).hasMessageContaining("server-cert.pem");

    assertThat(identity.trustedCas()).containsExactly(next.certificate());
    assertThat(identity.chain()[0].getSubjectX500Principal().getName()).isEqualTo("CN=server");
  }

  @Test
  void reload_brokenCertificateAndRewrittenCa_reportsCaTakenUpAndCertificateFailure()
      throws Exception {
    TlsSettings settings = write("server", ca, ClientAuth.REQUIRE_AND_VERIFY);
    TlsIdentity identity = TlsIdentity.load(settings, HOSTS);
    Files.writeString(settings.cert().get(), "not a certificate");
    Files.setLastModifiedTime(settings.cert().get(), FileTime.from(Instant.now().plusSeconds(10)));
    rewriteCaFile(Pem.encode(CertificateAuthority.create("next-ca", YEAR).certificate()));

    TlsReload reload = identity.reload();

    assertThat(reload.casReloaded()).isTrue();
    assertThat(reload.certificateReloaded()).isFalse();
    assertThat(reload.changed()).isTrue();
    assertThat(reload.failures()).singleElement().asString().contains("server-cert.pem");
    TlsReload again = identity.reload();
    assertThat(again.changed()).isFalse();
    assertThat(again.failures()).isEqualTo(reload.failures());
  }

  @Test
  void grpc_caFileRewritten_peerOfNewCaAcceptedAfterReload() throws Exception {
    TlsIdentity identity =
        TlsIdentity.load(write("server", ca, ClientAuth.REQUIRE_AND_VERIFY), HOSTS);
    int port = grpcServer(identity);
    CertificateAuthority next = CertificateAuthority.create("next-ca", YEAR);
    CertificateAuthority.Identity peer = next.issue("peer", HOSTS, YEAR);
    ChannelCredentials credentials =
        TlsChannelCredentials.newBuilder()
            .keyManager(KeyManagers.keyManager(peer.key(), peer.chain()))
            .trustManager(dir.resolve("ca.pem").toFile())
            .build();

    assertThatThrownBy(() -> liveCheck(port, credentials))
        .isInstanceOf(StatusRuntimeException.class)
        .hasMessageStartingWith("UNAVAILABLE");
    rewriteCaFile(Pem.encode(ca.certificate(), next.certificate()));
    assertThat(identity.reloadIfChanged()).isTrue();

    assertThat(liveCheck(port, credentials)).isEqualTo(LiveCheckResp.getDefaultInstance());
  }

  @Test
  void peerCredentials_caFileRewritten_serverOfNewCaTrustedAfterReload() throws Exception {
    TlsIdentity caller = TlsIdentity.load(write("caller", ca, ClientAuth.NONE), HOSTS);
    CertificateAuthority next = CertificateAuthority.create("next-ca", YEAR);
    TlsSettings serverSettings = write("next-server", next, ClientAuth.NONE);
    int port =
        grpcServer(
            TlsIdentity.load(
                new TlsSettings(
                    serverSettings.cert(), serverSettings.key(), Optional.empty(),
                    ClientAuth.NONE, "TLSv1.3", false, Duration.ofSeconds(10)),
                HOSTS));

    assertThatThrownBy(() -> liveCheck(port, caller.peerCredentials()))
        .isInstanceOf(StatusRuntimeException.class)
        .hasMessageStartingWith("UNAVAILABLE");
    rewriteCaFile(Pem.encode(next.certificate()));
    assertThat(caller.reloadIfChanged()).isTrue();

    assertThat(liveCheck(port, caller.peerCredentials()))
        .isEqualTo(LiveCheckResp.getDefaultInstance());
  }

  @Test
  void auto_withCaFile_generatedCaStaysTrustedAfterCaReload() throws Exception {
    TlsSettings auto =
        new TlsSettings(
            Optional.empty(), Optional.empty(), Optional.of(dir.resolve("ca.pem")),
            ClientAuth.REQUIRE_AND_VERIFY, "TLSv1.3", true, Duration.ofSeconds(10));
    TlsIdentity identity = TlsIdentity.load(auto, HOSTS);
    int port = grpcServer(identity);
    CertificateAuthority next = CertificateAuthority.create("next-ca", YEAR);
    CertificateAuthority.Identity peer = next.issue("peer", HOSTS, YEAR);
    X509Certificate autoCa = identity.chain()[identity.chain().length - 1];
    ChannelCredentials nextPeer =
        TlsChannelCredentials.newBuilder()
            .keyManager(KeyManagers.keyManager(peer.key(), peer.chain()))
            .trustManager(KeyManagers.trustManager(new X509Certificate[] {autoCa}))
            .build();

    rewriteCaFile(Pem.encode(next.certificate()));
    assertThat(identity.reloadIfChanged()).isTrue();

    assertThat(identity.trustedCas()).containsExactlyInAnyOrder(next.certificate(), autoCa);
    assertThat(liveCheck(port, identity.peerCredentials()))
        .isEqualTo(LiveCheckResp.getDefaultInstance());
    assertThat(liveCheck(port, nextPeer)).isEqualTo(LiveCheckResp.getDefaultInstance());
  }

  @Test
  void httpsEngines_clientAuthNoneOverride_clientWithoutCertificateServed()
      throws Exception {
    TlsIdentity identity =
        TlsIdentity.load(write("server", ca, ClientAuth.REQUIRE_AND_VERIFY), HOSTS);
    HttpRoute ok =
        HttpRoute.get("/ok", call -> HttpAnswer.json(200, "{}").completed());
    HttpListener listener =
        HttpListener.builder(new InetSocketAddress("127.0.0.1", 0))
            .routes(List.of(ok))
            .tls(identity.httpsEngines(ClientAuth.NONE))
            .start();
    resources.add(() -> listener.stop(Duration.ZERO));

    assertThat(statusLine(listener.port(), trustingCa())).isEqualTo("HTTP/1.1 200");
    assertThat(statusLine(https(identity).port(), trustingCa())).isEmpty();
  }
}
