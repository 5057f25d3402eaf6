package dev.weir.core.cluster.peer.auth;

import dev.weir.core.config.HostPort;
import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.core.time.SystemClock;
import io.grpc.ChannelCredentials;
import io.grpc.ClientInterceptor;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.ServerInterceptor;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.MetadataUtils;
import java.io.IOException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Supplier;
import org.slf4j.LoggerFactory;

/**
 * How members of a cluster prove to each other that they are members, on both ends of the peer
 * protocol: mutual TLS with an allow-list of identities, a shared secret, both, or (explicitly)
 * nothing.
 *
 * <p>With TLS, the peer listener requires a client certificate signed by a trusted CA ({@code
 * WEIR_TLS_CA}) whatever {@code WEIR_TLS_CLIENT_AUTH} says, and the certificate must carry an
 * allowed identity: the given allow-list, or by default the identities of this node's own current
 * certificate (so members sharing a certificate, or certificates with the same names, accept each
 * other and nothing else the CA signed). With a secret, every call must carry it. Members call
 * their peers with the same TLS identity and secret, verifying each peer's server certificate
 * against the address called or, when set, one server name all members' certificates carry.
 */
public final class PeerSecurity {

  /**
   * The largest message a peer call carries either way, 64 MiB: twice what 1000 items with the
   * longest names and keys allowed ({@code InputLimits.LONGEST_NAME_OR_KEY}) take in a forwarded
   * batch, GLOBAL chunk or hand-off chunk, whatever {@code WEIR_GRPC_MAX_MESSAGE_SIZE} allows
   * clients (peers are authenticated, and a batch gathers the items of many client calls).
   */
  public static final int MAX_MESSAGE_BYTES = 64 << 20;

  private final PeerTls tls;
  private final PeerIdentities allowList;
  private final PeerSecret secret;
  private final String serverName;

  private PeerSecurity(
      PeerTls tls, PeerIdentities allowList, PeerSecret secret, String serverName) {
    this.tls = tls;
    this.allowList = allowList;
    this.secret = secret;
    this.serverName = serverName;
  }

  /** Returns security by {@code secret} alone, over plaintext. */
  public static PeerSecurity sharedSecret(PeerSecret secret) {
    return new PeerSecurity(null, null, Objects.requireNonNull(secret, "secret"), null);
  }

  /**
   * Returns mutual TLS with {@code identity}, allowing the identities of {@code allowList} (null:
   * those of {@code identity}'s own certificate). Peers allow this member's calls by the DNS, URI
   * and IP names of {@code identity}'s certificate whatever their allow-lists, so {@code identity}
   * then refuses to change to a certificate without such a name (see {@link
   * PeerTls#checkCertificateChanges}).
   *
   * @throws IllegalArgumentException when the certificate carries no DNS, URI or IP name
   */
  public static PeerSecurity mutualTls(PeerTls identity, PeerIdentities allowList) {
    Objects.requireNonNull(identity, "identity");
    PeerIdentities.ofCertificate(identity.chain()[0]);
    identity.checkCertificateChanges(PeerIdentities::ofCertificate);
    return new PeerSecurity(identity, allowList, null, null);
  }

  /**
   * Returns mutual TLS as {@link #mutualTls} does, without requiring names of {@code identity}'s
   * certificate now or at its reloads: the security of a member that does not know yet whether it
   * has peers, or knows it has none. With a certificate without names, every call this member
   * makes is refused, and with {@code allowList} null every call it receives too; a member that
   * finds peers takes {@link #mutualTls} instead.
   */
  public static PeerSecurity mutualTlsBeforePeers(PeerTls identity, PeerIdentities allowList) {
    return new PeerSecurity(Objects.requireNonNull(identity, "identity"), allowList, null, null);
  }

  /**
   * Returns no security at all: anyone who reaches the peer listener can change the membership and
   * the counters. Only for a network where nothing but members can reach it.
   */
  public static PeerSecurity insecure() {
    return new PeerSecurity(null, null, null, null);
  }

  /** Returns this security with {@code value} also required of every call. */
  public PeerSecurity withSecret(PeerSecret value) {
    return new PeerSecurity(tls, allowList, Objects.requireNonNull(value, "secret"), serverName);
  }

  /**
   * Returns this security with every call to a peer verifying the peer's certificate against the
   * DNS name {@code name}, also sent as SNI and authority, instead of the address called: for
   * members sharing one certificate that cannot carry every member's address (pods' IPs).
   *
   * @throws IllegalArgumentException when {@code name} is not a DNS name (see {@link
   *     #checkServerName}) or the protocol does not run over TLS
   */
  public PeerSecurity withServerName(String name) {
    if (tls == null) {
      throw new IllegalArgumentException("a peer TLS server name needs TLS");
    }
    return new PeerSecurity(tls, allowList, secret, checkServerName(name));
  }

  /**
   * Returns {@code name} if it is a DNS name or IP address a TLS handshake can check a peer's
   * certificate for ({@link HostPort#isTlsName}), at most 253 characters, without a port or scheme.
   *
   * @throws IllegalArgumentException naming the value and saying what is allowed
   */
  public static String checkServerName(String name) {
    Objects.requireNonNull(name, "name");
    if (name.length() > 253 || !HostPort.isTlsName(name)) {
      throw new IllegalArgumentException(
          "'"
              + name
              + "' is not a DNS name; give "
              + HostPort.TLS_NAMES
              + ", at most 253 characters, without a port or scheme");
    }
    return name;
  }

  /** Returns whether callers must prove membership (TLS, a secret or both). */
  public boolean authenticated() {
    return tls != null || secret != null;
  }

  /** Returns whether the peer protocol runs over TLS. */
  public boolean tls() {
    return tls != null;
  }

  /** Describes the security for the start-up log, without the secret. */
  public String describe() {
    if (!authenticated()) {
      return "none (insecure: anyone who reaches the peer port is a member)";
    }
    StringBuilder out = new StringBuilder();
    if (tls != null) {
      out.append("mutual TLS, allowed identities ")
          .append(allowList != null ? allowList : "of this node's certificate " + allowed().get());
      if (serverName != null) {
        out.append(", peers' certificates verified for ").append(serverName);
      }
    }
    if (secret != null) {
      out.append(out.length() == 0 ? "" : " and ").append("shared secret");
    }
    return out.toString();
  }

  /**
   * Returns the server-side check of every peer call, counting refusals in {@code metrics}; null
   * when nothing is checked.
   */
  public ServerInterceptor serverCheck(WeirMetrics metrics) {
    if (!authenticated()) {
      return null;
    }
    return new PeerAuthInterceptor(
        secret,
        tls == null ? null : allowed(),
        metrics,
        new RateLimitedLogger(
            LoggerFactory.getLogger(PeerAuthInterceptor.class),
            SystemClock.INSTANCE,
            Duration.ofSeconds(10)));
  }

  /** Puts mutual TLS on the peer listener's {@code builder}, when TLS is on. */
  public void applyTo(NettyServerBuilder builder) throws IOException {
    if (tls != null) {
      builder.sslContext(tls.peerServerContext());
    }
  }

  /**
   * Opens a channel to the peer listener at {@code target} ({@code host:port}). Its callbacks run
   * on the transport's threads ({@code directExecutor}): what completes a peer call only completes
   * futures, answers calls and updates the ring, and the hand-off's store scan runs on its own
   * thread, so nothing blocks there; a thread hand-off per callback cost a forwarded item more CPU
   * than the call itself (docs/benchmarks.md). With a {@link #withServerName server name}, the
   * peer's certificate is verified against that name instead of {@code target}'s host.
   */
  public ManagedChannel channel(String target) {
    ChannelCredentials credentials =
        tls != null ? tls.peerCredentials() : InsecureChannelCredentials.create();
    ManagedChannelBuilder<?> builder =
        Grpc.newChannelBuilder(target, credentials)
            .directExecutor()
            .maxInboundMessageSize(MAX_MESSAGE_BYTES);
    if (serverName != null) {
      builder.overrideAuthority(serverName);
    }
    if (secret != null) {
      builder.intercept(secretSender(secret));
    }
    return builder.build();
  }

  /** Returns the client-side attachment of {@code secret} to every call. */
  static ClientInterceptor secretSender(PeerSecret secret) {
    Metadata headers = new Metadata();
    headers.put(PeerSecret.HEADER, secret.value());
    return MetadataUtils.newAttachHeadersInterceptor(headers);
  }

  private Supplier<PeerIdentities> allowed() {
    if (allowList != null) {
      return () -> allowList;
    }
    return new OwnCertificateIdentities(tls);
  }

  /**
   * The identities of this node's certificate, read again when the certificate was reloaded. A
   * certificate and its identities are swapped as one pair, so a call never pairs one certificate
   * with another's names. A certificate without names (one a {@link PeerTls} took up despite {@link
   * PeerTls#checkCertificateChanges}) keeps the previous names allowed, with a warning, rather than
   * failing every peer call; while the certificate has had no names (security {@link
   * #mutualTlsBeforePeers} made), no peer is allowed.
   */
  private static final class OwnCertificateIdentities implements Supplier<PeerIdentities> {
    private record Own(X509Certificate certificate, PeerIdentities identities) {}

    private final PeerTls tls;
    private volatile Own own;

    OwnCertificateIdentities(PeerTls tls) {
      this.tls = tls;
      X509Certificate current = tls.chain()[0];
      this.own = new Own(current, ownIdentities(current));
    }

    /** Returns the names of {@code certificate}, {@link PeerIdentities#NONE} when it has none. */
    private static PeerIdentities ownIdentities(X509Certificate certificate) {
      return PeerIdentities.identitiesOf(certificate).isEmpty()
          ? PeerIdentities.NONE
          : PeerIdentities.ofCertificate(certificate);
    }

    @Override
    public PeerIdentities get() {
      X509Certificate current = tls.chain()[0];
      Own seen = own;
      if (current == seen.certificate()) {
        return seen.identities();
      }
      PeerIdentities identities;
      try {
        identities = PeerIdentities.ofCertificate(current);
      } catch (IllegalArgumentException e) {
        identities = seen.identities();
        if (identities != PeerIdentities.NONE) {
          LoggerFactory.getLogger(PeerSecurity.class)
              .warn(
                  "{}; peers are still allowed by the previous certificate's names: {}",
                  e.getMessage(),
                  identities);
        }
      }
      own = new Own(current, identities);
      return identities;
    }
  }
}
