package dev.weir.tls;

import dev.weir.core.logging.RateLimitedLogger;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * A TLS context that is built again for the first use after the trust it verifies peers with
 * changes, so that no TLS session (cached session or session ticket) established under the previous
 * trust can be resumed: each build has its own session cache and ticket keys, which the next build
 * does not know. When a rebuild fails the previous build stays in use, a warning is logged (at most
 * one per {@link RateLimitedLogger#DEFAULT_INTERVAL}) and the next use tries again.
 *
 * @param <T> the context type (Netty's {@code SslContext} or the JDK's {@code SSLContext})
 */
final class TrustScoped<T> {

  /** Builds a context with the trust in use now. */
  interface Builder<T, E extends Exception> {
    T build() throws E;
  }

  private record Built<T>(long generation, T context) {}

  private static final RateLimitedLogger WARNINGS = RateLimitedLogger.of(TrustScoped.class);

  private final Builder<T, ?> builder;
  private final LongSupplier trustGeneration;
  private volatile Built<T> built;

  private TrustScoped(Builder<T, ?> builder, LongSupplier trustGeneration, Built<T> built) {
    this.builder = builder;
    this.trustGeneration = trustGeneration;
    this.built = built;
  }

  /**
   * Returns the context {@code builder} builds now, built again for the first {@link #current()}
   * after {@code trustGeneration} changes; a failure of this first build is thrown.
   */
  static <T, E extends Exception> TrustScoped<T> of(
      Builder<T, E> builder, LongSupplier trustGeneration) throws E {
    Objects.requireNonNull(builder, "builder");
    long generation = trustGeneration.getAsLong();
    return new TrustScoped<>(builder, trustGeneration, new Built<>(generation, builder.build()));
  }

  /** Returns the context of the last build, without checking the trust's generation. */
  T last() {
    return built.context();
  }

  /** Returns the context for the trust in use now, rebuilding it if the trust changed. */
  T current() {
    Built<T> now = built;
    long generation = trustGeneration.getAsLong();
    if (now.generation() == generation) {
      return now.context();
    }
    synchronized (this) {
      now = built;
      if (now.generation() != generation) {
        try {
          now = new Built<>(generation, builder.build());
          built = now;
        } catch (Exception e) {
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
}
