package dev.weir.core.limiter;

import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.store.BucketStore;
import dev.weir.core.time.Clock;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Applies the engine to buckets this node holds: resolves the request's clock, then updates the
 * request's bucket in the store atomically. Used for every item this node answers itself, whatever
 * service routed it here.
 */
public final class LocalLimiter {

  private static final Logger LOG = LoggerFactory.getLogger(LocalLimiter.class);

  private final RateLimitEngine engine;
  private final BucketStore store;
  private final Clock clock;
  private final RateLimitedLogger warnings;

  /**
   * Creates a limiter deciding with {@code engine} over {@code store}, stamping times from {@code
   * clock}.
   */
  public LocalLimiter(RateLimitEngine engine, BucketStore store, Clock clock) {
    this.engine = Objects.requireNonNull(engine, "engine");
    this.store = Objects.requireNonNull(store, "store");
    this.clock = Objects.requireNonNull(clock, "clock");
    this.warnings = new RateLimitedLogger(LOG, clock, RateLimitedLogger.DEFAULT_INTERVAL);
  }

  /**
   * Returns {@code request} with its {@code created_at} resolved: unchanged when set, this node's
   * wall clock when 0 (unset), as Gubernator does.
   */
  public RateLimitRequest stamp(RateLimitRequest request) {
    return request.createdAt() == 0 ? request.withCreatedAt(clock.wallMillis()) : request;
  }

  /**
   * Checks {@code request} against its bucket (keyed by {@link RateLimitRequest#hashKey()}) at its
   * {@code created_at}, the bucket's expiry included, and returns the answer. An unexpected failure
   * of the engine becomes the item's error rather than failing the call.
   */
  public RateLimitResponse decide(RateLimitRequest request) {
    RateLimitRequest stamped = stamp(request);
    long now = stamped.createdAt();
    try {
      return store.update(stamped.hashKey(), now, prior -> engine.apply(prior, stamped, now));
    } catch (RuntimeException e) {
      warnings.warn("apply", "rate limit for '{}' failed", stamped.hashKey(), e);
      return RateLimitResponse.error(
          "error while applying rate limit for '" + stamped.hashKey() + "': " + e.getMessage());
    }
  }

  /** Returns the store this limiter updates. */
  public BucketStore store() {
    return store;
  }
}
