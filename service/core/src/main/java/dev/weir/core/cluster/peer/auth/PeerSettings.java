package dev.weir.core.cluster.peer.auth;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import dev.weir.core.config.HostPort;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * The settings of a node's peer listener: where it binds and how peers prove their membership.
 *
 * @param address where the peer listener binds ({@code WEIR_PEER_ADDRESS}); its port is the one
 *     every member is called on unless discovery reports another
 * @param secret the shared secret every peer call carries ({@code WEIR_PEER_SECRET} or the file
 *     {@code WEIR_PEER_SECRET_FILE}), when set
 * @param allowedIdentities the identities a peer's TLS certificate must carry one of ({@code
 *     WEIR_PEER_ALLOWED_IDENTITIES}); empty means those of this node's own certificate
 * @param tlsServerName the DNS name peers' server certificates are verified against instead of the
 *     address called ({@code WEIR_PEER_TLS_SERVER_NAME}), when set
 * @param insecure run a cluster's peer protocol without authentication ({@code WEIR_PEER_INSECURE})
 */
public record PeerSettings(
    HostPort address,
    Optional<PeerSecret> secret,
    Optional<PeerIdentities> allowedIdentities,
    Optional<String> tlsServerName,
    boolean insecure) {

  /** {@code WEIR_PEER_ADDRESS}. */
  public static final EnvVar ADDRESS = EnvVar.of("WEIR_PEER_ADDRESS");

  /** {@code WEIR_PEER_SECRET}. */
  public static final EnvVar SECRET = EnvVar.of("WEIR_PEER_SECRET");

  /** {@code WEIR_PEER_SECRET_FILE}. */
  public static final EnvVar SECRET_FILE = EnvVar.of("WEIR_PEER_SECRET_FILE");

  /** {@code WEIR_PEER_ALLOWED_IDENTITIES}. */
  public static final EnvVar ALLOWED_IDENTITIES = EnvVar.of("WEIR_PEER_ALLOWED_IDENTITIES");

  /** {@code WEIR_PEER_TLS_SERVER_NAME}, alias {@code GUBER_TLS_CLIENT_AUTH_SERVER_NAME}. */
  public static final EnvVar TLS_SERVER_NAME =
      EnvVar.of("WEIR_PEER_TLS_SERVER_NAME", "GUBER_TLS_CLIENT_AUTH_SERVER_NAME");

  /** {@code WEIR_PEER_INSECURE}. */
  public static final EnvVar INSECURE = EnvVar.of("WEIR_PEER_INSECURE");

  /** The default peer port, next to Gubernator's HTTP (1050) and gRPC (1051) ports. */
  public static final int DEFAULT_PORT = 1052;

  /** Returns the defaults of a node whose gRPC listener binds {@code grpcAddress}. */
  public static PeerSettings defaults(HostPort grpcAddress) {
    return new PeerSettings(
        grpcAddress.withPort(DEFAULT_PORT),
        Optional.empty(),
        Optional.empty(),
        Optional.empty(),
        false);
  }

  /**
   * Reads the settings from {@code env}; the peer listener binds the gRPC listener's host at port
   * {@value #DEFAULT_PORT} unless {@code WEIR_PEER_ADDRESS} says otherwise.
   *
   * @throws ConfigException naming the variable, the value (never a secret's) and what is allowed
   */
  public static PeerSettings from(EnvReader env, HostPort grpcAddress) {
    HostPort address = env.hostPort(ADDRESS, grpcAddress.withPort(DEFAULT_PORT));
    Optional<String> inline = env.lookup(SECRET).map(EnvReader.Setting::value);
    Optional<String> file = env.lookup(SECRET_FILE).map(EnvReader.Setting::value);
    if (inline.isPresent() && file.isPresent()) {
      throw new ConfigException(
          SECRET.name() + " and " + SECRET_FILE.name() + " are both set; set one of them");
    }
    Optional<PeerSecret> secret = Optional.empty();
    if (inline.isPresent()) {
      secret = Optional.of(secret(SECRET.name(), inline.get()));
    } else if (file.isPresent()) {
      secret = Optional.of(secret(SECRET_FILE.name() + "='" + file.get() + "'", read(file.get())));
    }
    Optional<PeerIdentities> allowed =
        env.lookup(ALLOWED_IDENTITIES).map(s -> identities(s.value()));
    Optional<String> serverName = env.lookup(TLS_SERVER_NAME).map(PeerSettings::serverName);
    boolean insecure = env.bool(INSECURE, false);
    if (insecure && secret.isPresent()) {
      throw new ConfigException(
          INSECURE.name()
              + "=true turns peer authentication off, but a peer secret is set; unset one of them");
    }
    return new PeerSettings(address, secret, allowed, serverName, insecure);
  }

  /**
   * Checks that a node with TLS {@code tls} (on or off) and possibly other members ({@code
   * mayHavePeers}) authenticates its peers, or was told not to.
   *
   * @throws ConfigException with one line saying what to set
   */
  public void checkAuthenticated(boolean tls, boolean mayHavePeers) {
    if (allowedIdentities.isPresent() && !tls) {
      throw new ConfigException(
          ALLOWED_IDENTITIES.name()
              + " needs TLS (WEIR_TLS_CERT and WEIR_TLS_KEY, or WEIR_TLS_AUTO): the identities are"
              + " those of peers' TLS client certificates");
    }
    if (tlsServerName.isPresent() && !tls) {
      throw new ConfigException(
          TLS_SERVER_NAME.name()
              + " (or "
              + TLS_SERVER_NAME.alias()
              + ")='"
              + tlsServerName.get()
              + "' is set but TLS is off: the name is what peers' TLS server certificates are"
              + " verified against; set WEIR_TLS_CERT and WEIR_TLS_KEY (or WEIR_TLS_AUTO) to turn"
              + " TLS on, or unset it");
    }
    if (insecure && tls) {
      throw new ConfigException(
          INSECURE.name()
              + "=true turns peer authentication off, but TLS is on; unset one of them");
    }
    if (mayHavePeers && !tls && secret.isEmpty() && !insecure) {
      throw new ConfigException(
          "a cluster of several nodes needs an authenticated peer protocol: set "
              + SECRET.name()
              + " (or "
              + SECRET_FILE.name()
              + ") to the same secret on every node, or turn TLS on (WEIR_TLS_CERT); "
              + INSECURE.name()
              + "=true runs it unauthenticated, letting anyone who reaches the peer port ("
              + address
              + ") change membership and counters");
    }
  }

  private static PeerSecret secret(String source, String value) {
    try {
      return PeerSecret.of(value);
    } catch (IllegalArgumentException e) {
      throw new ConfigException(source + " is not valid: " + e.getMessage());
    }
  }

  private static String read(String file) {
    try {
      return Files.readString(Path.of(file), StandardCharsets.UTF_8).strip();
    } catch (IOException | RuntimeException e) {
      throw new ConfigException(
          SECRET_FILE.name() + "='" + file + "' cannot be read: " + e.getMessage());
    }
  }

  private static String serverName(EnvReader.Setting setting) {
    try {
      return PeerSecurity.checkServerName(setting.value());
    } catch (IllegalArgumentException e) {
      throw new ConfigException(setting.variable() + " is not valid: " + e.getMessage());
    }
  }

  private static PeerIdentities identities(String value) {
    List<String> patterns =
        Arrays.stream(value.split(",")).map(String::trim).filter(p -> !p.isEmpty()).toList();
    try {
      return PeerIdentities.of(patterns);
    } catch (IllegalArgumentException e) {
      throw new ConfigException(
          ALLOWED_IDENTITIES.name() + "='" + value + "' is not valid: " + e.getMessage());
    }
  }
}
