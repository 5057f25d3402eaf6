package dev.weir.core.engine;

import dev.weir.core.model.RateLimitRequest;
import java.time.ZoneId;

/**
 * The pure rate-limit engine: given a bucket's prior state, a request and the time, decides the answer
 * and the next state. No I/O, no clock reads.
 */
public final class RateLimitEngine {

  private final ZoneId zone;

  /** Creates an engine whose Gregorian intervals follow {@code zone}. */
  public RateLimitEngine(ZoneId zone) {
    this.zone = zone;
  }

  /**
   * Applies {@code request} to {@code prior} (null when the bucket does not exist) at epoch millisecond
   * {@code now}.
   */
  public Decision apply(BucketState prior, RateLimitRequest request, long now) {
    throw new UnsupportedOperationException("engine not implemented yet: " + zone);
  }
}
