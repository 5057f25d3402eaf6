package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.EnvReader;
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
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
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
}
