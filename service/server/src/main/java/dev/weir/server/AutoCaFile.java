package dev.weir.server;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import dev.weir.tls.Pem;
import dev.weir.tls.TlsSettings;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.cert.X509Certificate;
import java.util.Optional;

/**
 * The file a node started with {@code WEIR_TLS_AUTO=true} writes its generated CA certificate to,
 * so that gRPC and HTTPS clients can trust the node: {@code WEIR_TLS_AUTO_CA_FILE}, else {@code
 * weir-auto-ca-<gRPC port>.pem} in the system's temporary directory. It holds the certificate only,
 * as PEM, readable by every user: it is no secret.
 */
final class AutoCaFile {

  /** {@code WEIR_TLS_AUTO_CA_FILE}: where the generated CA is written. */
  static final EnvVar FILE = EnvVar.of("WEIR_TLS_AUTO_CA_FILE");

  private AutoCaFile() {}

  /**
   * Returns the file {@code env} names, if it names one; throws {@link ConfigException} when it
   * names one but {@code tls} generates no CA to write there: {@code WEIR_TLS_AUTO} is off, or a
   * certificate is set, which {@code WEIR_TLS_AUTO} then leaves alone.
   */
  static Optional<Path> configured(EnvReader env, TlsSettings tls) {
    Optional<EnvReader.Setting> setting = env.lookup(FILE);
    if (setting.isEmpty()) {
      return Optional.empty();
    }
    String set = FILE.name() + "='" + setting.get().value() + "' is set but ";
    if (!tls.auto()) {
      throw new ConfigException(
          set
              + env.nameSet(TlsSettings.AUTO)
              + " is off: the file is where the CA that "
              + TlsSettings.AUTO.name()
              + " generates is written; set "
              + TlsSettings.AUTO.name()
              + "=true, or unset it");
    }
    if (tls.cert().isPresent()) {
      throw new ConfigException(
          set
              + env.nameSet(TlsSettings.CERT)
              + " is set too, so "
              + env.nameSet(TlsSettings.AUTO)
              + " generates no CA to write there; unset one of them");
    }
    return Optional.of(Path.of(setting.get().value()));
  }

  /** Returns the default file of a node whose gRPC listener has {@code grpcPort}. */
  static Path byDefault(int grpcPort) {
    return Path.of(System.getProperty("java.io.tmpdir"), "weir-auto-ca-" + grpcPort + ".pem");
  }

  /**
   * Writes {@code ca} to {@code file} as PEM, replacing what was there in one step, so a client
   * never reads half a certificate.
   */
  static void write(Path file, X509Certificate ca) throws IOException {
    Path absolute = file.toAbsolutePath();
    Path temporary =
        Files.createTempFile(absolute.getParent(), "." + absolute.getFileName(), ".tmp");
    try {
      Files.writeString(temporary, Pem.encode(ca), StandardCharsets.US_ASCII);
      if (Files.getFileStore(temporary).supportsFileAttributeView("posix")) {
        Files.setPosixFilePermissions(temporary, PosixFilePermissions.fromString("rw-r--r--"));
      }
      Files.move(
          temporary, absolute, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } finally {
      Files.deleteIfExists(temporary);
    }
  }
}
