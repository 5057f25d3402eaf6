package dev.weir.tls;

import dev.weir.core.cluster.peer.auth.PeerTls;
import io.grpc.ChannelCredentials;
import io.grpc.TlsChannelCredentials;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslProvider;
import java.io.IOException;
import java.security.GeneralSecurityException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Supplier;
import javax.net.ssl.KeyManager;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509ExtendedKeyManager;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * A node's TLS identity and trust, and the server and client contexts built on them: the gRPC
 * listener's Netty context, the HTTP listeners' JDK contexts, and the channel credentials for calls
 * to peers. All share one key manager and one trust manager, so a reloaded certificate or CA file
 * is used everywhere at once. The server contexts are rebuilt when the CA file is taken up, so a
 * TLS session established under the previous CAs cannot be resumed.
 */
public final class TlsIdentity implements PeerTls {

  private final TlsSettings settings;
  private final X509ExtendedKeyManager keyManager;
  private final X509ExtendedTrustManager trustManager;
  private final ReloadingKeyManager reloadingKeys;
  private final ReloadingTrustManager reloadingTrust;
  private final X509Certificate generatedCa;

  private TlsIdentity(
      TlsSettings settings,
      X509ExtendedKeyManager keyManager,
      X509ExtendedTrustManager trustManager,
      ReloadingKeyManager reloadingKeys,
      ReloadingTrustManager reloadingTrust,
      X509Certificate generatedCa) {
    this.settings = settings;
    this.keyManager = keyManager;
    this.trustManager = trustManager;
    this.reloadingKeys = reloadingKeys;
    this.reloadingTrust = reloadingTrust;
    this.generatedCa = generatedCa;
  }

  /**
   * Loads the identity {@code settings} name, or with {@code WEIR_TLS_AUTO} generates a CA and a
   * certificate for {@code hosts} (valid one year) and trusts that CA. The CA file, when given, is
   * trusted too and reloaded with the certificate; the generated CA stays trusted across reloads.
   */
  public static TlsIdentity load(TlsSettings settings, List<String> hosts)
      throws IOException, GeneralSecurityException {
    if (settings.cert().isPresent()) {
      ReloadingTrustManager reloadingTrust =
          settings.ca().isPresent() ? ReloadingTrustManager.load(settings.ca().get()) : null;
      ReloadingKeyManager keys =
          ReloadingKeyManager.load(settings.cert().get(), settings.key().orElseThrow());
      X509ExtendedTrustManager trust =
          reloadingTrust != null ? reloadingTrust : KeyManagers.trustManager(null);
      return new TlsIdentity(settings, keys, trust, keys, reloadingTrust, null);
    }
    CertificateAuthority ca = CertificateAuthority.create("weir-auto-ca", Duration.ofDays(365));
    CertificateAuthority.Identity identity = ca.issue("weir", hosts, Duration.ofDays(365));
    ReloadingTrustManager reloadingTrust =
        settings.ca().isPresent()
            ? ReloadingTrustManager.load(settings.ca().get(), ca.certificate())
            : null;
    X509ExtendedTrustManager trust =
        reloadingTrust != null
            ? reloadingTrust
            : KeyManagers.trustManager(new X509Certificate[] {ca.certificate()});
    return new TlsIdentity(
        settings,
        KeyManagers.keyManager(identity.key(), identity.chain()),
        trust,
        null,
        reloadingTrust,
        ca.certificate());
  }

  /**
   * Re-reads the certificate and key files and the CA file if they changed; returns whether any
   * did. Each is reloaded on its own: a file that cannot be used keeps its previous contents in
   * use, and its error is thrown once the others were tried.
   */
  public boolean reloadIfChanged() throws IOException, GeneralSecurityException {
    Reload reload = reloadEach();
    Exception failure = null;
    for (Exception e : reload.errors()) {
      if (failure == null) {
        failure = e;
      } else {
        failure.addSuppressed(e);
      }
    }
    if (failure instanceof IOException io) {
      throw io;
    }
    if (failure instanceof GeneralSecurityException security) {
      throw security;
    }
    if (failure instanceof RuntimeException runtime) {
      throw runtime;
    }
    return reload.result().changed();
  }

  /**
   * Re-reads the certificate and key files and the CA file if they changed, each on its own, and
   * returns what was taken up and what could not be used (which keeps its previous contents).
   */
  public TlsReload reload() {
    return reloadEach().result();
  }

  private record Reload(TlsReload result, List<Exception> errors) {}

  private Reload reloadEach() {
    boolean certificate = false;
    boolean cas = false;
    List<Exception> errors = new ArrayList<>();
    if (reloadingKeys != null) {
      try {
        certificate = reloadingKeys.reloadIfChanged();
      } catch (IOException | GeneralSecurityException | RuntimeException e) {
        errors.add(e);
      }
    }
    if (reloadingTrust != null) {
      try {
        cas = reloadingTrust.reloadIfChanged();
      } catch (IOException | GeneralSecurityException | RuntimeException e) {
        errors.add(e);
      }
    }
    List<String> failures = errors.stream().map(Exception::getMessage).toList();
    return new Reload(new TlsReload(certificate, cas, failures), errors);
  }

  /**
   * Returns the CA certificate generated at start with {@code WEIR_TLS_AUTO}, which signed this
   * node's certificate; empty when the certificate came from files.
   */
  public Optional<X509Certificate> generatedCa() {
    return Optional.ofNullable(generatedCa);
  }

  /** Returns the CA certificates trusted now. */
  public X509Certificate[] trustedCas() {
    return trustManager.getAcceptedIssuers();
  }

  /** Returns the certificate chain presented now. */
  @Override
  public X509Certificate[] chain() {
    return reloadingKeys != null
        ? reloadingKeys.currentChain()
        : keyManager.getCertificateChain(KeyManagers.ALIAS);
  }

  /**
   * Makes every later reload of the certificate file pass {@code check} first (see {@link
   * ReloadingKeyManager#checkReloads}); a generated identity never changes.
   */
  @Override
  public void checkCertificateChanges(Consumer<X509Certificate> check) {
    if (reloadingKeys != null) {
      reloadingKeys.checkReloads(check);
    }
  }

  /** Returns the Netty context for the gRPC listener. */
  public SslContext grpcServerContext() throws IOException {
    return grpcServerContext(settings.clientAuth());
  }

  /**
   * Returns the Netty context for the peer listener: mutual TLS, whatever {@code
   * WEIR_TLS_CLIENT_AUTH} says; every caller must present a certificate the trusted CAs signed.
   */
  @Override
  public SslContext peerServerContext() throws IOException {
    return grpcServerContext(ClientAuth.REQUIRE_AND_VERIFY);
  }

  private SslContext grpcServerContext(ClientAuth clientAuth) throws IOException {
    return TrustScopedSslContext.of(
        () -> buildGrpcServerContext(clientAuth), this::trustGeneration);
  }

  private long trustGeneration() {
    return reloadingTrust != null ? reloadingTrust.generation() : 0;
  }

  private SslContext buildGrpcServerContext(ClientAuth clientAuth) throws IOException {
    SslContextBuilder builder =
        GrpcSslContexts.configure(SslContextBuilder.forServer(keyManager), SslProvider.JDK)
            .trustManager(trustManager)
            .protocols(settings.protocols())
            .clientAuth(
                switch (clientAuth) {
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

  /** Returns the engines of the HTTPS listener: protocols and client authentication as set. */
  public Supplier<SSLEngine> httpsEngines() throws GeneralSecurityException {
    return httpsEngines(settings.clientAuth());
  }

  /**
   * Returns a supplier of server-mode engines with this identity and protocols, one per HTTPS
   * connection, that ask clients for certificates as {@code clientAuth} says, whatever {@code
   * WEIR_TLS_CLIENT_AUTH} is: the status listener uses {@link ClientAuth#NONE}. Each engine reads
   * the certificate and CAs in use when its handshake runs, so a reload reaches new connections;
   * engines made after the CA file was taken up come from a new context, which cannot resume a
   * session established under the previous CAs.
   */
  public Supplier<SSLEngine> httpsEngines(ClientAuth clientAuth) throws GeneralSecurityException {
    String[] protocols = settings.protocols();
    TrustScoped<SSLContext> contexts = TrustScoped.of(this::sslContext, this::trustGeneration);
    return () -> {
      SSLContext context = contexts.current();
      SSLEngine engine = context.createSSLEngine();
      engine.setUseClientMode(false);
      SSLParameters parameters = context.getDefaultSSLParameters();
      parameters.setProtocols(protocols);
      switch (clientAuth) {
        case NONE -> parameters.setWantClientAuth(false);
        case REQUEST -> parameters.setWantClientAuth(true);
        case REQUIRE_AND_VERIFY -> parameters.setNeedClientAuth(true);
      }
      engine.setSSLParameters(parameters);
      return engine;
    };
  }

  /** Returns the credentials for calling peers: this identity as client, trusting the CA. */
  @Override
  public ChannelCredentials peerCredentials() {
    return TlsChannelCredentials.newBuilder()
        .keyManager(keyManager)
        .trustManager(trustManager)
        .build();
  }
}
