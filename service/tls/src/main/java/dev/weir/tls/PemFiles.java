package dev.weir.tls;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The PEM files a set of variables names for one TLS end: a certificate chain and its private key,
 * which come together or not at all, and the CAs the other end's certificate must chain to.
 *
 * @param cert the certificate chain, empty for none
 * @param key the certificate's private key, present exactly when {@code cert} is
 * @param ca the CA certificates, empty for the JVM's trust store
 */
public record PemFiles(Optional<Path> cert, Optional<Path> key, Optional<Path> ca) {

  /** Creates the files, requiring {@code cert} and {@code key} together. */
  public PemFiles {
    if (cert.isPresent() != key.isPresent()) {
      throw new IllegalArgumentException("a certificate and its key come together");
    }
  }

  /**
   * Reads the paths held by {@code cert}, {@code key} and {@code ca}; one of {@code cert} and
   * {@code key} set without the other throws a {@link ConfigException} naming both (as set, name or
   * alias) and the one set.
   */
  public static PemFiles read(EnvReader reader, EnvVar cert, EnvVar key, EnvVar ca) {
    Optional<Path> certFile = reader.path(cert);
    Optional<Path> keyFile = reader.path(key);
    if (certFile.isPresent() != keyFile.isPresent()) {
      String certName = reader.nameSet(cert);
      String keyName = reader.nameSet(key);
      throw new ConfigException(
          certName
              + " and "
              + keyName
              + " must be set together: only "
              + (certFile.isPresent() ? certName : keyName)
              + " is set");
    }
    return new PemFiles(certFile, keyFile, reader.path(ca));
  }
}
