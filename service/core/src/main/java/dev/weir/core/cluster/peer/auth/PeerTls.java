package dev.weir.core.cluster.peer.auth;

import io.grpc.ChannelCredentials;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import java.io.IOException;
import java.security.cert.X509Certificate;

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
}
