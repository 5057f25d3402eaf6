package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.cluster.peer.auth.PeerSettings;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.store.ClockBucketStore;
import dev.weir.core.testkit.FakeClock;
import dev.weir.proto.gubernator.LiveCheckReq;
import dev.weir.proto.gubernator.V1Grpc;
import dev.weir.tls.CertificateAuthority;
import dev.weir.tls.Pem;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.KeyStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TlsReloadNodeTest {

  private static final WeirConfig CONFIG = TestConfigs.loopback();
  private static final Duration YEAR = Duration.ofDays(365);

  @TempDir Path dir;
  private final FakeClock clock = new FakeClock();
  private final List<ManagedChannel> channels = new ArrayList<>();
  private WeirNode node;

  @AfterEach
  void stop() throws Exception {
    for (ManagedChannel channel : channels) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (node != null) {
      node.close();
    }
  }

  private void liveCheck(ChannelCredentials credentials) {
    ManagedChannel channel =
        Grpc.newChannelBuilderForAddress("127.0.0.1", node.grpcPort(), credentials).build();
    channels.add(channel);
    V1Grpc.newBlockingStub(channel)
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .liveCheck(LiveCheckReq.getDefaultInstance());
  }

  @Test
  void reloadTls_caFileRewritten_peerOfNewCaRefusedBeforeAcceptedAfter() throws Exception {
    CertificateAuthority ca = CertificateAuthority.create("test-ca", YEAR);
    CertificateAuthority next = CertificateAuthority.create("next-ca", YEAR);
    Path caFile = dir.resolve("ca.pem");
    Files.writeString(caFile, Pem.encode(ca.certificate()));
    Path[] server = PemFiles.writeIdentity(dir, ca, "server");
    Path[] peer = PemFiles.writeIdentity(dir, next, "peer");
    node =
        WeirNode.builder(CONFIG)
            .ops(
                OpsSettings.from(
                    new EnvReader(
                        Map.of(
                            "WEIR_TLS_CERT", server[0].toString(),
                            "WEIR_TLS_KEY", server[1].toString(),
                            "WEIR_TLS_CA", caFile.toString(),
                            "WEIR_TLS_CLIENT_AUTH", "require-and-verify"))))
            .clock(clock)
            .store(new ClockBucketStore(clock, 1000))
            .start();
    ChannelCredentials nextPeer =
        TlsChannelCredentials.newBuilder()
            .keyManager(peer[0].toFile(), peer[1].toFile())
            .trustManager(caFile.toFile())
            .build();

    assertThatThrownBy(() -> liveCheck(nextPeer))
        .isInstanceOf(StatusRuntimeException.class)
        .hasMessageStartingWith("UNAVAILABLE");
    FileTime loaded = Files.getLastModifiedTime(caFile);
    Files.writeString(caFile, Pem.encode(ca.certificate(), next.certificate()));
    Files.setLastModifiedTime(caFile, FileTime.from(loaded.toInstant().plusSeconds(10)));
    node.reloadTls();

    liveCheck(nextPeer);
    assertThat(node.tlsIdentity().orElseThrow().trustedCas())
        .contains(ca.certificate(), next.certificate());
  }

  @Test
  void start_singleNodeWithCertificateWithoutNames_servesHttps() throws Exception {
    CertificateAuthority ca = CertificateAuthority.create("test-ca", YEAR);
    Path[] bare = writeIdentity(ca, "bare", List.of());
    Path caFile = dir.resolve("ca.pem");
    Files.writeString(caFile, Pem.encode(ca.certificate()));

    node = startWithCertificate(bare, caFile, new HostPort("127.0.0.1", 0));

    assertThat(healthCheckStatus(ca)).isEqualTo("HTTP/1.1 200 OK");
    assertThat(node.peerPort()).isEmpty();
  }

  @Test
  void reloadTls_singleNode_renewedCertificateWithoutNamesTakenUp() throws Exception {
    CertificateAuthority ca = CertificateAuthority.create("test-ca", YEAR);
    Path[] named = writeIdentity(ca, "named", PemFiles.HOSTS);
    Path caFile = dir.resolve("ca.pem");
    Files.writeString(caFile, Pem.encode(ca.certificate()));
    node = startWithCertificate(named, caFile, new HostPort("127.0.0.1", PeerSettings.DEFAULT_PORT));
    FileTime loaded = Files.getLastModifiedTime(named[0]);
    CertificateAuthority.Identity renewed = ca.issue("renewed", List.of(), YEAR);
    Files.writeString(named[0], Pem.encode((Object[]) renewed.chain()));
    Files.writeString(named[1], Pem.encode(renewed.key()));
    for (Path file : named) {
      Files.setLastModifiedTime(file, FileTime.from(loaded.toInstant().plusSeconds(10)));
    }

    node.reloadTls();

    assertThat(node.tlsIdentity().orElseThrow().chain()[0].getSubjectX500Principal().getName())
        .isEqualTo("CN=renewed");
    assertThat(healthCheckStatus(ca)).isEqualTo("HTTP/1.1 200 OK");
  }

  private Path[] writeIdentity(CertificateAuthority ca, String name, List<String> hosts)
      throws Exception {
    CertificateAuthority.Identity identity = ca.issue(name, hosts, YEAR);
    Path cert = dir.resolve(name + "-cert.pem");
    Path key = dir.resolve(name + "-key.pem");
    Files.writeString(cert, Pem.encode((Object[]) identity.chain()));
    Files.writeString(key, Pem.encode(identity.key()));
    return new Path[] {cert, key};
  }

  /**
   * Starts a node alone (no static peers, no discovery) with the certificate {@code identity} and
   * its peer listener's address at {@code peerAddress}.
   */
  private WeirNode startWithCertificate(Path[] identity, Path caFile, HostPort peerAddress)
      throws Exception {
    return WeirNode.builder(CONFIG)
        .peers(
            new PeerSettings(
                peerAddress, Optional.empty(), Optional.empty(), Optional.empty(), false))
        .ops(
            OpsSettings.from(
                new EnvReader(
                    Map.of(
                        "WEIR_TLS_CERT", identity[0].toString(),
                        "WEIR_TLS_KEY", identity[1].toString(),
                        "WEIR_TLS_CA", caFile.toString()))))
        .clock(clock)
        .store(new ClockBucketStore(clock, 1000))
        .start();
  }

  /**
   * Returns the status line of {@code GET /v1/HealthCheck} over HTTPS, trusting {@code ca}: the
   * chain is verified, the host name is not (a certificate without names matches none).
   */
  private String healthCheckStatus(CertificateAuthority ca) throws Exception {
    KeyStore trust = KeyStore.getInstance("PKCS12");
    trust.load(null, null);
    trust.setCertificateEntry("ca", ca.certificate());
    TrustManagerFactory factory =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    factory.init(trust);
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(null, factory.getTrustManagers(), null);
    try (SSLSocket socket =
        (SSLSocket) context.getSocketFactory().createSocket("127.0.0.1", node.httpPort())) {
      socket.setSoTimeout(10_000);
      socket.startHandshake();
      socket
          .getOutputStream()
          .write(
              "GET /v1/HealthCheck HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                  .getBytes(StandardCharsets.US_ASCII));
      socket.getOutputStream().flush();
      return new BufferedReader(
              new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII))
          .readLine();
    }
  }
}
