package dev.weir.server;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.HostPort;
import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.time.SystemClock;
import dev.weir.tls.TlsIdentity;
import dev.weir.tls.TlsReload;
import dev.weir.tls.TlsSettings;
import java.io.IOException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The TLS identities of a node: its own, which every listener and the peer clients use, and,
 * when set, one for the client-facing gRPC listener alone; each is re-read when its files change.
 */
final class NodeTls {

  private static final Logger LOG = LoggerFactory.getLogger(NodeTls.class);

  /** The variables that name the node identity's files (or their {@code GUBER_} aliases). */
  private static final String NODE_FILES = "WEIR_TLS_CERT, WEIR_TLS_KEY and WEIR_TLS_CA";

  /** The variables that name the client gRPC listener's files, in {@code ratelimit} mode. */
  private static final String CLIENT_GRPC_FILES =
      "GRPC_SERVER_TLS_CERT, GRPC_SERVER_TLS_KEY and GRPC_SERVER_TLS_CA_CERT";

  private final TlsIdentity node;
  private final TlsIdentity grpc;
  private final Duration reloadInterval;
  private final RateLimitedLogger warnings =
      new RateLimitedLogger(LOG, SystemClock.INSTANCE, Duration.ofMinutes(1));

  private NodeTls(TlsIdentity node, TlsIdentity grpc, Duration reloadInterval) {
    this.node = node;
    this.grpc = grpc;
    this.reloadInterval = reloadInterval;
  }

  /**
   * Loads the identities {@code node} and {@code clientGrpc} turn on, for certificates naming
   * {@code advertise}'s host (or generated for it with {@code WEIR_TLS_AUTO}).
   *
   * @throws ConfigException naming the variables and the reason when a file cannot be read or used
   */
  static NodeTls load(TlsSettings node, TlsSettings clientGrpc, HostPort advertise) {
    TlsIdentity own = load(node, advertise, NODE_FILES);
    TlsIdentity grpc = load(clientGrpc, advertise, CLIENT_GRPC_FILES);
    return new NodeTls(
        own, grpc, (own != null ? node : clientGrpc).reloadInterval());
  }

  private static TlsIdentity load(TlsSettings settings, HostPort advertise, String files) {
    if (!settings.enabled()) {
      return null;
    }
    try {
      return TlsIdentity.load(settings, List.of(advertise.host(), "localhost", "127.0.0.1"));
    } catch (IOException | GeneralSecurityException e) {
      throw new ConfigException(
          "the TLS files set by " + files + " cannot be used: " + e.getMessage());
    }
  }

  /** Returns the node's identity, empty when TLS is off. */
  Optional<TlsIdentity> node() {
    return Optional.ofNullable(node);
  }

  /** Returns the identity of the client-facing gRPC listener: its own if set, else the node's. */
  Optional<TlsIdentity> grpc() {
    return Optional.ofNullable(grpc != null ? grpc : node);
  }

  /** Returns whether any identity is loaded, so there are files to reload. */
  boolean any() {
    return node != null || grpc != null;
  }

  /** Returns how often the files are checked for changes. */
  Duration reloadInterval() {
    return reloadInterval;
  }

  /**
   * Writes the CA the node's identity generated ({@code WEIR_TLS_AUTO}), if it did, to {@code
   * file} and logs where it is and how clients trust it; a file that cannot be written is a warning
   * (the node still serves).
   */
  void writeAutoCa(Path file, HostPort advertise) {
    if (node == null || node.generatedCa().isEmpty()) {
      return;
    }
    try {
      AutoCaFile.write(file, node.generatedCa().get());
      LOG.info(
          "WEIR_TLS_AUTO: the CA generated for this node is in {}; clients trust it with, e.g.,"
              + " grpcurl -cacert {} {} list",
          file,
          file,
          advertise);
    } catch (IOException | RuntimeException e) {
      LOG.warn(
          "WEIR_TLS_AUTO: cannot write the generated CA to {} ({}); clients cannot verify this"
              + " node: set {} to a writable file",
          file,
          e.toString(),
          AutoCaFile.FILE.name());
    }
  }

  /**
   * Re-reads the certificate, key and CA files that changed and logs the outcome: what was taken
   * up at INFO, each file that could not be used (and keeps its previous contents) at WARN, at most
   * once a minute per identity, so a node identity failing for hours does not hide the client gRPC
   * listener's.
   */
  void reload() {
    if (node != null) {
      reload(node, "tls-reload node");
    }
    if (grpc != null) {
      reload(grpc, "tls-reload grpc");
    }
  }

  private void reload(TlsIdentity identity, String throttleKey) {
    try {
      TlsReload reload = identity.reload();
      if (reload.certificateReloaded()) {
        LOG.info("TLS certificate reloaded: {}", identity.chain()[0].getSubjectX500Principal());
      }
      if (reload.casReloaded()) {
        LOG.info(
            "TLS CA file reloaded: {} trusted CA certificate(s)", identity.trustedCas().length);
      }
      if (!reload.failures().isEmpty()) {
        warnings.warn(
            throttleKey,
            "TLS files not reloaded, their previous contents stay in use: {}",
            String.join("; ", reload.failures()));
      }
    } catch (RuntimeException e) {
      warnings.warn(throttleKey, "TLS reload failed: {}", e.toString());
    }
  }
}
