package dev.weir.core.cluster.peer.auth;

import io.grpc.ChannelCredentials;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import java.io.IOException;
import java.security.cert.X509Certificate;
import java.util.function.Consumer;

/**
 * A member's TLS identity as the peer protocol uses it: the certificate it presents, the context of
 * its peer listener and the credentials of its calls to peers. The {@code weir-tls} module's {@code
 * TlsIdentity} (files with reload, or a generated CA) is one; an embedding application may supply
 * its own.
 */
public interface PeerTls {

  /** Returns the certificate chain presented now, this member's own certificate first. */
  X509Certificate[] chain();

  /**
   * Returns the Netty context for the peer listener: mutual TLS, every caller presenting a
   * certificate the trusted CAs signed.
   */
  SslContext peerServerContext() throws IOException;

  /** Returns the credentials for calling peers: this identity as client, trusting the same CAs. */
  ChannelCredentials peerCredentials();

  /**
   * Makes every later change of this identity's certificate pass {@code check} first: a
   * certificate {@code check} throws {@link IllegalArgumentException} for is not taken up, the
   * current one stays in use and the change reports the exception's message. Peer security
   * registers the check of its start-up when the allowed peers derive from this certificate. The
   * default does nothing, for an identity whose certificate never changes.
   */
  default void checkCertificateChanges(Consumer<X509Certificate> check) {}
}
