package dev.weir.core.cluster.peer.auth;

import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.metrics.WeirMetrics;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;

/**
 * Lets a call through to the peer protocol only from a member: with a shared secret, the call must
 * carry it ({@value PeerSecret#HEADER_NAME}); with an allow-list, the TLS client certificate
 * (already verified against the trusted CAs by the handshake) must carry an allowed identity.
 * Otherwise the call is closed before any handler runs: {@code UNAUTHENTICATED} for a missing or
 * wrong secret or no certificate, {@code PERMISSION_DENIED} for a certificate not on the list (the
 * caller is not told the list). Each refusal counts in {@link WeirMetrics#refused} and is logged at
 * most once per 10 s per reason, naming the caller's address and identities, never the secret.
 */
public final class PeerAuthInterceptor implements ServerInterceptor {

  private static final int MAX_LOGGED_IDENTITIES = 5;

  private final PeerSecret secret;
  private final Supplier<PeerIdentities> allowed;
  private final WeirMetrics metrics;
  private final RateLimitedLogger warnings;

  /**
   * Creates the check of {@code secret} (null: none) and of the certificate's identities against
   * {@code allowed} (null: none), counting refusals in {@code metrics}.
   */
  public PeerAuthInterceptor(
      PeerSecret secret,
      Supplier<PeerIdentities> allowed,
      WeirMetrics metrics,
      RateLimitedLogger warnings) {
    this.secret = secret;
    this.allowed = allowed;
    this.metrics = Objects.requireNonNull(metrics, "metrics");
    this.warnings = Objects.requireNonNull(warnings, "warnings");
  }

  @Override
  public <Q, A> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, A> call, Metadata headers, ServerCallHandler<Q, A> next) {
    if (secret != null && !secret.matches(headers.get(PeerSecret.HEADER))) {
      String why =
          headers.containsKey(PeerSecret.HEADER)
              ? "a wrong peer secret"
              : "no peer secret (" + PeerSecret.HEADER_NAME + ")";
      return refuse(call, Status.UNAUTHENTICATED, RefusalReason.PEER_UNAUTHENTICATED, why, why);
    }
    if (allowed != null) {
      List<String> identities = clientIdentities(call);
      if (identities == null) {
        return refuse(
            call,
            Status.UNAUTHENTICATED,
            RefusalReason.PEER_UNAUTHENTICATED,
            "no TLS client certificate",
            "no TLS client certificate");
      }
      PeerIdentities list = allowed.get();
      if (!list.allowsAny(identities)) {
        return refuse(
            call,
            Status.PERMISSION_DENIED,
            RefusalReason.PEER_NOT_ALLOWED,
            "a certificate whose identities are not allowed",
            "a certificate for "
                + describe(identities)
                + ", none of which is allowed ("
                + list
                + ")");
      }
    }
    return next.startCall(call, headers);
  }

  private <Q, A> ServerCall.Listener<Q> refuse(
      ServerCall<Q, A> call, Status status, RefusalReason reason, String told, String why) {
    metrics.refused(reason);
    warnings.warn(
        "peer auth " + reason.label(),
        "refused a peer call {} from {}: it carried {}",
        call.getMethodDescriptor().getFullMethodName(),
        call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR),
        why);
    call.close(status.withDescription("not a member of this cluster: " + told), new Metadata());
    return new ServerCall.Listener<>() {};
  }

  /** Returns the identities of the verified client certificate, or null when there is none. */
  private static List<String> clientIdentities(ServerCall<?, ?> call) {
    SSLSession session = call.getAttributes().get(Grpc.TRANSPORT_ATTR_SSL_SESSION);
    if (session == null) {
      return null;
    }
    try {
      Certificate[] chain = session.getPeerCertificates();
      if (chain.length == 0 || !(chain[0] instanceof X509Certificate leaf)) {
        return null;
      }
      return PeerIdentities.identitiesOf(leaf);
    } catch (SSLPeerUnverifiedException e) {
      return null;
    }
  }

  private static String describe(List<String> identities) {
    if (identities.isEmpty()) {
      return "no DNS, URI or IP name";
    }
    if (identities.size() <= MAX_LOGGED_IDENTITIES) {
      return identities.toString();
    }
    return identities.subList(0, MAX_LOGGED_IDENTITIES)
        + " and "
        + (identities.size() - MAX_LOGGED_IDENTITIES)
        + " more";
  }
}
