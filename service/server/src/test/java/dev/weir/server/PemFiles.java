package dev.weir.server;

import dev.weir.tls.CertificateAuthority;
import dev.weir.tls.Pem;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/** PEM files of identities issued in tests. */
final class PemFiles {

  /** The host names every test certificate is valid for. */
  static final List<String> HOSTS = List.of("localhost", "127.0.0.1");

  private PemFiles() {}

  /**
   * Writes a certificate (valid one year for {@link #HOSTS}) and key issued by {@code ca} to {@code
   * name}-cert.pem and {@code name}-key.pem in {@code dir}; returns both paths, certificate first.
   */
  static Path[] writeIdentity(Path dir, CertificateAuthority ca, String name) throws Exception {
    CertificateAuthority.Identity identity = ca.issue(name, HOSTS, Duration.ofDays(365));
    Path cert = dir.resolve(name + "-cert.pem");
    Path key = dir.resolve(name + "-key.pem");
    Files.writeString(cert, Pem.encode((Object[]) identity.chain()));
    Files.writeString(key, Pem.encode(identity.key()));
    return new Path[] {cert, key};
  }
}
