package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.weir.core.config.HostPort;
import dev.weir.tls.CertificateAuthority;
import dev.weir.tls.ClientAuth;
import dev.weir.tls.TlsSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

class NodeTlsTest {

  @TempDir Path dir;

  private static TlsSettings files(Path[] identity) {
    return new TlsSettings(
        Optional.of(identity[0]),
        Optional.of(identity[1]),
        Optional.empty(),
        ClientAuth.NONE,
        "TLSv1.3",
        false,
        Duration.ofSeconds(10));
  }

  private static void breakCertificate(Path file) throws Exception {
    Files.writeString(file, "not a certificate");
    Files.setLastModifiedTime(file, FileTime.from(Instant.now().plusSeconds(10)));
  }

  @Test
  void reload_bothIdentitiesFail_eachFailureLoggedNotOneHidingTheOther() throws Exception {
    CertificateAuthority ca = CertificateAuthority.create("test-ca", Duration.ofDays(1));
    Path[] node = PemFiles.writeIdentity(dir, ca, "node");
    Path[] grpc = PemFiles.writeIdentity(dir, ca, "grpc");
    NodeTls tls = NodeTls.load(files(node), files(grpc), new HostPort("127.0.0.1", 1051));
    breakCertificate(node[0]);
    breakCertificate(grpc[0]);
    Logger logger = (Logger) LoggerFactory.getLogger(NodeTls.class);
    ListAppender<ILoggingEvent> logged = new ListAppender<>();
    logged.start();
    logger.addAppender(logged);
    try {
      tls.reload();
    } finally {
      logger.detachAppender(logged);
    }

    assertThat(logged.list)
        .filteredOn(e -> e.getLevel() == Level.WARN)
        .extracting(ILoggingEvent::getFormattedMessage)
        .satisfiesExactlyInAnyOrder(
            line -> assertThat(line).contains(node[0].toString()),
            line -> assertThat(line).contains(grpc[0].toString()));
  }
}
