package dev.weir.tls;

import dev.weir.core.cluster.peer.auth.PeerIdentities;
import dev.weir.core.cluster.peer.auth.PeerSettings;
import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * The TLS settings of a node. TLS is on when a certificate is given or {@code WEIR_TLS_AUTO} is
 * true; it then covers the gRPC listener, the HTTP listener and calls to peers.
 *
 * @param cert PEM certificate chain of this node ({@code WEIR_TLS_CERT})
 * @param key PEM private key of the certificate, PKCS#8 or PKCS#1 ({@code WEIR_TLS_KEY})
 * @param ca PEM CA certificates that client and peer certificates must chain to ({@code
 *     WEIR_TLS_CA}), reloaded when the file changes; absent means the JDK's default trust store
 * @param clientAuth whether clients must present certificates ({@code WEIR_TLS_CLIENT_AUTH})
 * @param minVersion the lowest protocol accepted, {@code TLSv1.2} or {@code TLSv1.3} ({@code
 *     WEIR_TLS_MIN_VERSION})
 * @param auto generate a self-signed CA and certificate at start ({@code WEIR_TLS_AUTO})
 * @param reloadInterval how often the files are checked for changes ({@code
 *     WEIR_TLS_RELOAD_INTERVAL})
 */
public record TlsSettings(
    Optional<Path> cert,
    Optional<Path> key,
    Optional<Path> ca,
    ClientAuth clientAuth,
    String minVersion,
    boolean auto,
    Duration reloadInterval) {

  /** {@code WEIR_TLS_CERT}, alias {@code GUBER_TLS_CERT}. */
  public static final EnvVar CERT = EnvVar.of("WEIR_TLS_CERT", "GUBER_TLS_CERT");

  /** {@code WEIR_TLS_KEY}, alias {@code GUBER_TLS_KEY}. */
  public static final EnvVar KEY = EnvVar.of("WEIR_TLS_KEY", "GUBER_TLS_KEY");

  /** {@code WEIR_TLS_CA}, alias {@code GUBER_TLS_CA}. */
  public static final EnvVar CA = EnvVar.of("WEIR_TLS_CA", "GUBER_TLS_CA");

  /**
   * Gubernator's {@code GUBER_TLS_CLIENT_AUTH_CA_CERT}: read only to refuse a client CA other than
   * {@link #CA} (Weir has no CA of its own for client certificates).
   */
  public static final EnvVar GUBERNATOR_CLIENT_CA = EnvVar.of("GUBER_TLS_CLIENT_AUTH_CA_CERT");

  /** {@code WEIR_TLS_CLIENT_AUTH}, alias {@code GUBER_TLS_CLIENT_AUTH}. */
  public static final EnvVar CLIENT_AUTH =
      EnvVar.of("WEIR_TLS_CLIENT_AUTH", "GUBER_TLS_CLIENT_AUTH");

  /** {@code WEIR_TLS_MIN_VERSION}, alias {@code GUBER_TLS_MIN_VERSION}. */
  public static final EnvVar MIN_VERSION =
      EnvVar.of("WEIR_TLS_MIN_VERSION", "GUBER_TLS_MIN_VERSION");

  /** {@code WEIR_TLS_AUTO}, alias {@code GUBER_TLS_AUTO}. */
  public static final EnvVar AUTO = EnvVar.of("WEIR_TLS_AUTO", "GUBER_TLS_AUTO");

  /** {@code WEIR_TLS_RELOAD_INTERVAL}. */
  public static final EnvVar RELOAD_INTERVAL = EnvVar.of("WEIR_TLS_RELOAD_INTERVAL");

  /** TLS off. */
  public static final TlsSettings DISABLED =
      new TlsSettings(
          Optional.empty(),
          Optional.empty(),
          Optional.empty(),
          ClientAuth.NONE,
          "TLSv1.3",
          false,
          Duration.ofSeconds(10));

  /** Returns whether TLS is on. */
  public boolean enabled() {
    return cert.isPresent() || auto;
  }

  /** Returns the protocols accepted: from the minimum version up. */
  public String[] protocols() {
    return minVersion.equals("TLSv1.2")
        ? new String[] {"TLSv1.3", "TLSv1.2"}
        : new String[] {"TLSv1.3"};
  }

  /**
   * Checks that nodes with these settings can verify each other's certificates on the peer
   * listener, which requires a client certificate of a trusted CA whatever {@code
   * WEIR_TLS_CLIENT_AUTH} says; for a node that may have peers, {@code peers} saying why ({@code
   * WEIR_STATIC_PEERS lists other nodes}). {@code WEIR_TLS_AUTO} alone cannot: every node generates
   * a CA of its own, which no other node trusts, so each would mark every peer down and limit alone.
   * Nor can {@code WEIR_TLS_CERT} without {@code WEIR_TLS_CA}: the JVM's public CAs would be the
   * only ones trusted, not the private CA node certificates come from (for public CAs, {@code
   * WEIR_TLS_CA} names a bundle of them), as {@code WEIR_TLS_CLIENT_AUTH=require-and-verify} needs
   * {@code WEIR_TLS_CA} too.
   *
   * @throws ConfigException naming the setting, its value and what a cluster needs instead
   */
  public void checkPeerTrust(EnvReader env, String peers) {
    if (cert.isEmpty() && auto) {
      throw new ConfigException(
          env.nameSet(AUTO)
              + "=true cannot secure a cluster, but this node may have peers ("
              + peers
              + "): each node generates its own CA, so no node could verify another's certificate"
              + " and every peer would be marked down; for a cluster set "
              + CERT.name()
              + " and "
              + KEY.name()
              + " to certificates of one CA and "
              + CA.name()
              + " to that CA, or leave TLS off and set WEIR_PEER_SECRET (or"
              + " WEIR_PEER_SECRET_FILE) to the same secret on every node; "
              + AUTO.name()
              + " is for a single node");
    }
    if (cert.isPresent() && ca.isEmpty()) {
      throw new ConfigException(
          env.nameSet(CERT)
              + "='"
              + cert.get()
              + "' is set without "
              + CA.name()
              + ", but this node may have peers ("
              + peers
              + "): the peer listener requires a client certificate of a trusted CA whatever "
              + CLIENT_AUTH.name()
              + " says, and without "
              + CA.name()
              + " only the JVM's public CAs are trusted, so peers with certificates of a private CA"
              + " would be refused and every peer marked down; set "
              + CA.name()
              + " to the CA that signed the nodes' certificates (to trust public CAs, to a bundle"
              + " of them)");
    }
  }

  /**
   * Checks that the certificate of a node that may have peers ({@code peers} saying why) carries a
   * DNS, URI or IP subject alternative name, the names by which its peers allow the calls it makes
   * with that certificate, whatever their allow-lists. A file that cannot be read is left to the
   * start, which names it.
   *
   * @throws ConfigException naming the variable, the file, the certificate and what it needs
   */
  public void checkPeerNames(EnvReader env, String peers) {
    if (cert.isEmpty()) {
      return;
    }
    X509Certificate[] chain;
    try {
      chain = Pem.certificates(cert.get());
    } catch (IOException | RuntimeException e) {
      return;
    }
    if (chain.length == 0 || !PeerIdentities.identitiesOf(chain[0]).isEmpty()) {
      return;
    }
    throw new ConfigException(
        env.nameSet(CERT)
            + "='"
            + cert.get()
            + "' holds a certificate ("
            + chain[0].getSubjectX500Principal()
            + ") without a DNS, URI or IP subject alternative name, but this node may have peers ("
            + peers
            + "), which allow the node calling them by those names of its certificate alone,"
            + " whatever "
            + PeerSettings.ALLOWED_IDENTITIES.name()
            + " says, so every peer would refuse this node's calls; use certificates with a DNS,"
            + " URI or IP subject alternative name");
  }

  /**
   * Refuses Gubernator's {@code GUBER_TLS_CLIENT_AUTH_CA_CERT}, the CA client certificates chain to,
   * when client certificates are asked for and it names another file than {@code ca}: Weir verifies
   * clients against {@code WEIR_TLS_CA} alone, so ignoring it would admit every client certificate
   * that CA signed, which Gubernator refuses. Naming the CA file itself, or with {@code auth} {@link
   * ClientAuth#NONE} (Gubernator then never uses it), it changes nothing and is accepted.
   *
   * @throws ConfigException naming the variable, its value, the CA file and what to set instead
   */
  private static void refuseGubernatorClientCa(EnvReader env, ClientAuth auth, Optional<Path> ca) {
    if (auth == ClientAuth.NONE) {
      return;
    }
    env.lookup(GUBERNATOR_CLIENT_CA)
        .filter(set -> ca.map(file -> !sameFile(file, Path.of(set.value()))).orElse(true))
        .ifPresent(
            set -> {
              throw new ConfigException(
                  set.variable()
                      + "='"
                      + set.value()
                      + "' is set to another file than "
                      + (ca.isPresent()
                          ? env.nameSet(CA) + "='" + ca.get() + "'"
                          : CA.name() + " (unset)")
                      + " while "
                      + env.nameSet(CLIENT_AUTH)
                      + "='"
                      + env.lookup(CLIENT_AUTH).map(EnvReader.Setting::value).orElse("")
                      + "' asks for client certificates (with none it is not read), but Weir has"
                      + " no CA of its"
                      + " own for client certificates: it"
                      + " verifies clients and peers against "
                      + CA.name()
                      + " (or "
                      + CA.alias()
                      + ") alone, so it would admit every client certificate that CA signs; put"
                      + " the CAs clients and peers chain to in "
                      + CA.name()
                      + " and unset "
                      + set.variable()
                      + " or set it to the same file");
            });
  }

  // Two spellings of one file, such as a Secret mount's file and its ..data link, are one file.
  private static boolean sameFile(Path a, Path b) {
    try {
      return Files.isSameFile(a, b);
    } catch (IOException e) {
      return a.toAbsolutePath().normalize().equals(b.toAbsolutePath().normalize());
    }
  }

  /**
   * Reads the settings from {@code env}. Gubernator's client-auth words are accepted too: {@code
   * request-cert} and {@code verify-cert} mean {@code request}, {@code require-any-cert} and
   * {@code require-and-verify} mean {@code require-and-verify}. A CA file or a client-auth mode
   * with TLS off, and {@code require-and-verify} without a CA to verify against (the CA {@code
   * WEIR_TLS_AUTO} generates only when no certificate file is set), are errors: either would serve
   * without the client check asked for. So is {@code require-and-verify} with {@code WEIR_TLS_AUTO}
   * and no CA file, which would admit no client: the generated CA signs no client's certificate.
   * Since Weir verifies {@code require-any-cert} as {@code require-and-verify}, these errors say so
   * when it is the value given.
   */
  public static TlsSettings from(EnvReader env) {
    PemFiles files = PemFiles.read(env, CERT, KEY, CA);
    String auth =
        env.oneOf(
            CLIENT_AUTH,
            "none",
            List.of(
                "none",
                "request",
                "request-cert",
                "verify-cert",
                "require-and-verify",
                "require-any-cert"));
    ClientAuth clientAuth =
        switch (auth) {
          case "none" -> ClientAuth.NONE;
          case "request", "request-cert", "verify-cert" -> ClientAuth.REQUEST;
          default -> ClientAuth.REQUIRE_AND_VERIFY;
        };
    refuseGubernatorClientCa(env, clientAuth, files.ca());
    String version = env.oneOf(MIN_VERSION, "1.3", List.of("1.2", "1.3"));
    boolean auto = env.bool(AUTO, false);
    Duration reload =
        env.duration(RELOAD_INTERVAL, Duration.ofSeconds(10), Duration.ofSeconds(1), Duration.ofHours(24));
    if (files.cert().isEmpty() && !auto) {
      if (clientAuth != ClientAuth.NONE || files.ca().isPresent()) {
        throw new ConfigException(
            (files.ca().isPresent()
                    ? env.nameSet(CA) + " is set"
                    : env.nameSet(CLIENT_AUTH) + "=" + auth + " is set")
                + " but TLS is off: set "
                + CERT.name()
                + " and "
                + KEY.name()
                + ", or "
                + AUTO.name()
                + "=true, to turn it on");
      }
    } else if (clientAuth == ClientAuth.REQUIRE_AND_VERIFY && files.ca().isEmpty()) {
      String asked =
          env.nameSet(CLIENT_AUTH)
              + "="
              + auth
              + (auth.equals("require-any-cert")
                  ? " (Weir verifies it as require-and-verify)"
                  : "");
      throw new ConfigException(
          files.cert().isPresent()
              ? asked
                  + " needs "
                  + env.nameSet(CA)
                  + ", the CA client certificates chain to"
                  + (auto
                      ? " (" + env.nameSet(AUTO) + " generates one only without "
                          + env.nameSet(CERT) + ")"
                      : "")
              : asked
                  + " with "
                  + env.nameSet(AUTO)
                  + "=true and no "
                  + env.nameSet(CA)
                  + " admits no client: the CA that "
                  + env.nameSet(AUTO)
                  + " generates never leaves the node, so no client holds a certificate it"
                  + " signs; set "
                  + env.nameSet(CA)
                  + " to the CA your clients' certificates chain to, or "
                  + env.nameSet(CLIENT_AUTH)
                  + " to request or none");
    }
    return new TlsSettings(
        files.cert(), files.key(), files.ca(), clientAuth, "TLSv" + version, auto, reload);
  }
}
