package dev.weir.tls;

import io.grpc.netty.shaded.io.netty.buffer.ByteBufAllocator;
import io.grpc.netty.shaded.io.netty.handler.ssl.ApplicationProtocolNegotiator;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import java.io.IOException;
import java.util.List;
import java.util.function.LongSupplier;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLSessionContext;

/**
 * A Netty context that is rebuilt whenever the trust it verifies peers with changes ({@link
 * TrustScoped}), so that no TLS session established under the previous trust can be resumed.
 */
final class TrustScopedSslContext extends SslContext {

  /** Builds a context with the trust in use now. */
  interface Builder extends TrustScoped.Builder<SslContext, IOException> {}

  private final TrustScoped<SslContext> scoped;

  private TrustScopedSslContext(TrustScoped<SslContext> scoped) {
    this.scoped = scoped;
  }

  /**
   * Returns a context built by {@code builder} now and again for the first engine after {@code
   * trustGeneration} changes, as {@link TrustScoped} keeps it.
   */
  static TrustScopedSslContext of(Builder builder, LongSupplier trustGeneration)
      throws IOException {
    return new TrustScopedSslContext(TrustScoped.of(builder, trustGeneration));
  }

  @Override
  public boolean isClient() {
    return scoped.last().isClient();
  }

  @Override
  public List<String> cipherSuites() {
    return scoped.last().cipherSuites();
  }

  @Override
  public ApplicationProtocolNegotiator applicationProtocolNegotiator() {
    return scoped.last().applicationProtocolNegotiator();
  }

  @Override
  public SSLEngine newEngine(ByteBufAllocator alloc) {
    return scoped.current().newEngine(alloc);
  }

  @Override
  public SSLEngine newEngine(ByteBufAllocator alloc, String peerHost, int peerPort) {
    return scoped.current().newEngine(alloc, peerHost, peerPort);
  }

  @Override
  public SSLSessionContext sessionContext() {
    return scoped.current().sessionContext();
  }
}
