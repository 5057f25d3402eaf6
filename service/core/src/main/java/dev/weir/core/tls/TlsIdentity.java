package dev.weir.core.tls;

import io.grpc.ChannelCredentials;
import io.grpc.TlsChannelCredentials;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslProvider;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsParameters;
import java.io.IOException;
import java.security.GeneralSecurityException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import javax.net.ssl.KeyManager;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509ExtendedKeyManager;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * A node's TLS identity and trust, and the server and client contexts built on them: the gRPC
 * listener's Netty context, the HTTP listener's JDK context, and the channel credentials for calls
 * to peers. All share one key manager, so a reloaded certificate is used everywhere at once.
 */
public final class TlsIdentity {

  private final TlsSettings settings;
  private final X509ExtendedKeyManager keyManager;
  private final X509ExtendedTrustManager trustManager;
  private final ReloadingKeyManager reloading;

  private TlsIdentity(
      TlsSettings settings,
      X509ExtendedKeyManager keyManager,
      X509ExtendedTrustManager trustManager,
      ReloadingKeyManager reloading) {
    this.settings = settings;
    this.keyManager = keyManager;
    this.trustManager = trustManager;
    this.reloading = reloading;
  }

  /**
   * Loads the identity {@code settings} name, or with {@code WEIR_TLS_AUTO} generates a CA and a
   * certificate for {@code hosts} (valid one year) and trusts that CA.
   */
  public static TlsIdentity load(TlsSettings settings, List<String> hosts)
      throws IOException, GeneralSecurityException {
    X509Certificate[] cas = null;
    if (settings.ca().isPresent()) {
      cas = Pem.certificates(settings.ca().get());
    }
    if (settings.cert().isPresent()) {
      ReloadingKeyManager keys =
          ReloadingKeyManager.load(settings.cert().get(), settings.key().orElseThrow());
      return new TlsIdentity(settings, keys, KeyManagers.trustManager(cas), keys);
    }
    CertificateAuthority ca = CertificateAuthority.create("weir-auto-ca", Duration.ofDays(365));
    CertificateAuthority.Identity identity = ca.issue("weir", hosts, Duration.ofDays(365));
    X509Certificate[] trusted = cas != null ? append(cas, ca.certificate()) : new X509Certificate[] {ca.certificate()};
    return new TlsIdentity(
        settings,
        KeyManagers.keyManager(identity.key(), identity.chain()),
        KeyManagers.trustManager(trusted),
        null);
  }

  private static X509Certificate[] append(X509Certificate[] cas, X509Certificate extra) {
    X509Certificate[] all = java.util.Arrays.copyOf(cas, cas.length + 1);
    all[cas.length] = extra;
    return all;
  }

  /** Re-reads the certificate and key files if they changed; returns whether they did. */
  public boolean reloadIfChanged() throws IOException, GeneralSecurityException {
    return reloading != null && reloading.reloadIfChanged();
  }

  /** Returns the certificate chain presented now. */
  public X509Certificate[] chain() {
    return keyManager.getCertificateChain("weir");
  }

  /** Returns the Netty context for the gRPC listener. */
  public SslContext grpcServerContext() throws IOException {
    SslContextBuilder builder =
        GrpcSslContexts.configure(SslContextBuilder.forServer(keyManager), SslProvider.JDK)
            .trustManager(trustManager)
            .protocols(settings.protocols())
            .clientAuth(
                switch (settings.clientAuth()) {
                  case NONE -> io.grpc.netty.shaded.io.netty.handler.ssl.ClientAuth.NONE;
                  case REQUEST -> io.grpc.netty.shaded.io.netty.handler.ssl.ClientAuth.OPTIONAL;
                  case REQUIRE_AND_VERIFY ->
                      io.grpc.netty.shaded.io.netty.handler.ssl.ClientAuth.REQUIRE;
                });
    return builder.build();
  }

  /** Returns the JDK context with this identity and trust, for HTTPS and plain TLS sockets. */
  public SSLContext sslContext() throws GeneralSecurityException {
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(new KeyManager[] {keyManager}, new TrustManager[] {trustManager}, null);
    return context;
  }

  /** Returns the configurator of the HTTPS listener: protocols and client authentication. */
  public HttpsConfigurator httpsConfigurator() throws GeneralSecurityException {
    SSLContext context = sslContext();
    return new HttpsConfigurator(context) {
      @Override
      public void configure(HttpsParameters params) {
        SSLParameters parameters = context.getDefaultSSLParameters();
        parameters.setProtocols(settings.protocols());
        switch (settings.clientAuth()) {
          case NONE -> parameters.setWantClientAuth(false);
          case REQUEST -> parameters.setWantClientAuth(true);
          case REQUIRE_AND_VERIFY -> parameters.setNeedClientAuth(true);
        }
        params.setSSLParameters(parameters);
      }
    };
  }

  /** Returns the credentials for calling peers: this identity as client, trusting the CA. */
  public ChannelCredentials peerCredentials() {
    return TlsChannelCredentials.newBuilder()
        .keyManager(keyManager)
        .trustManager(trustManager)
        .build();
  }
}
