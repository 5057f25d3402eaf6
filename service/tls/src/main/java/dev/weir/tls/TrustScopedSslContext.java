package dev.weir.tls;

import dev.weir.core.logging.RateLimitedLogger;
import io.grpc.netty.shaded.io.netty.buffer.ByteBufAllocator;
import io.grpc.netty.shaded.io.netty.handler.ssl.ApplicationProtocolNegotiator;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import java.io.IOException;
import java.util.List;
import java.util.Objects;
import java.util.function.LongSupplier;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLSessionContext;

/**
 * A Netty context that is rebuilt whenever the trust it verifies peers with changes, so that no
 * TLS session (cached session or session ticket) established under the previous trust can be
 * resumed: each build has its own session cache and ticket keys, which the next build does not
 * know.
 */
final class TrustScopedSslContext extends SslContext {

  /** Builds a context with the trust in use now. */
  interface Builder {
    SslContext build() throws IOException;
  }

  private record Built(long generation, SslContext context) {}

  private static final RateLimitedLogger WARNINGS =
      RateLimitedLogger.of(TrustScopedSslContext.class);

  private final Builder builder;
  private final LongSupplier trustGeneration;
  private volatile Built built;

  private TrustScopedSslContext(Builder builder, LongSupplier trustGeneration, Built built) {
    this.builder = builder;
    this.trustGeneration = trustGeneration;
    this.built = built;
  }

  /**
   * Returns a context built by {@code builder} now and again for the first engine after {@code
   * trustGeneration} changes; when that rebuild fails the previous build stays in use, a warning
   * is logged (at most one per {@link RateLimitedLogger#DEFAULT_INTERVAL}) and the next engine
   * tries again.
   */
  static TrustScopedSslContext of(Builder builder, LongSupplier trustGeneration)
      throws IOException {
    Objects.requireNonNull(builder, "builder");
    long generation = trustGeneration.getAsLong();
    return new TrustScopedSslContext(
        builder, trustGeneration, new Built(generation, builder.build()));
  }

  private SslContext current() {
    Built now = built;
    long generation = trustGeneration.getAsLong();
    if (now.generation() == generation) {
      return now.context();
    }
    synchronized (this) {
      now = built;
      if (now.generation() != generation) {
        try {
          now = new Built(generation, builder.build());
          built = now;
        } catch (IOException | RuntimeException e) {
          WARNINGS.warn(
              "rebuild",
              "TLS context not rebuilt for the trust taken up (CA generation {}): {}; the context of"
                  + " CA generation {} stays in use, so sessions set up before the change can still"
                  + " be resumed, and the rebuild is tried again on the next connection",
              generation,
              e.toString(),
              now.generation(),
              e);
        }
      }
      return now.context();
    }
  }

  @Override
  public boolean isClient() {
    return built.context().isClient();
  }

  @Override
  public List<String> cipherSuites() {
    return built.context().cipherSuites();
  }

  @Override
  public ApplicationProtocolNegotiator applicationProtocolNegotiator() {
    return built.context().applicationProtocolNegotiator();
  }

  @Override
  public SSLEngine newEngine(ByteBufAllocator alloc) {
    return current().newEngine(alloc);
  }

  @Override
  public SSLEngine newEngine(ByteBufAllocator alloc, String peerHost, int peerPort) {
    return current().newEngine(alloc, peerHost, peerPort);
  }

  @Override
  public SSLSessionContext sessionContext() {
    return current().sessionContext();
  }
}
