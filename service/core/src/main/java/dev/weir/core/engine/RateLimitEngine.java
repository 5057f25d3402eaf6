package dev.weir.core.engine;

import dev.weir.core.model.GregorianInterval;
import dev.weir.core.model.Algorithm;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import java.time.ZoneId;

/**
 * The pure rate-limit engine: given a bucket's prior state, a request and the time, decides the
 * answer and the next state. No I/O, no clock reads.
 *
 * <p>A prior state is live while {@code now < prior.expireAt()}; an expired prior counts as absent.
 * A live prior of another algorithm is discarded and a new bucket created, as Gubernator does when
 * a client switches algorithms. A request whose configuration is invalid (see {@link
 * RequestValidator#validateConfig}) gets a per-item error and leaves the prior state as it was. The
 * algorithms are described in docs/engine.md. Instances are thread-safe; their only mutable field is a
 * memo of the last leak rate computed, an immutable value.
 */
public final class RateLimitEngine {

  private final ZoneId zone;
  private final TokenBucket tokenBucket;
  private final LeakyBucket leakyBucket;
  private final FixedWindow fixedWindow;
  private final SlidingWindow slidingWindow;

  /**
   * Creates an engine whose Gregorian intervals follow {@code zone}, or the zone a request names in
   * its {@link dev.weir.core.model.GregorianInterval#TIME_ZONE_METADATA} metadata entry.
   */
  public RateLimitEngine(ZoneId zone) {
    this.zone = zone;
    Calendars calendars = new Calendars(zone);
    this.tokenBucket = new TokenBucket(calendars);
    this.leakyBucket = new LeakyBucket(calendars);
    this.fixedWindow = new FixedWindow(calendars);
    this.slidingWindow = new SlidingWindow(calendars);
  }

  /** Returns the zone of this engine's Gregorian intervals. */
  public ZoneId zone() {
    return zone;
  }

  /**
   * Applies {@code request} to {@code prior} (null when the bucket does not exist) at epoch
   * millisecond {@code now}, the request's {@code created_at} as resolved by the caller.
   */
  public Decision apply(BucketState prior, RateLimitRequest request, long now) {
    String error = RequestValidator.configError(request);
    if (error != null) {
      return new Decision(prior, RateLimitResponse.error(error));
    }
    BucketState live = isLive(prior, now) ? prior : null;
    Algorithm algorithm = RequestValidator.algorithmOf(request.algorithm());
    return switch (algorithm) {
      case TOKEN_BUCKET -> tokenBucket.apply(live, request, now);
      case LEAKY_BUCKET -> leakyBucket.apply(live, request, now);
      case FIXED_WINDOW -> fixedWindow.apply(live, request, now);
      case SLIDING_WINDOW -> slidingWindow.apply(live, request, now);
    };
  }

  /** Returns whether {@code state} is non-null and has not expired at {@code now}. */
  public static boolean isLive(BucketState state, long now) {
    return state != null && now < state.expireAt();
  }

  /**
   * Returns the {@code reset_time} that Gubernator reports for a token bucket whose state is {@code
   * state}: the last millisecond of its window, one before {@link TokenBucketState#expireAt()}.
   */
  public static long tokenBucketResetTime(TokenBucketState state) {
    return TokenBucket.resetTime(state);
  }

  /**
   * Returns the {@link TokenBucketState#expireAt()} of a token bucket whose reported {@code
   * reset_time} is {@code resetTime}, for rebuilding a state from a Gubernator {@code
   * UpdatePeerGlobal}.
   */
  public static long tokenBucketExpireAt(long resetTime) {
    return TokenBucket.expireAt(resetTime);
  }

  /**
   * Returns the whole tokens a leaky bucket in {@code state} holds at epoch millisecond {@code now}
   * ({@link LeakyBucketState#remaining()} is the count at {@link LeakyBucketState#updatedAt()}), so
   * that two states last updated at different times can be compared. A state does not record whether
   * its duration is a Gregorian interval: a duration of 0 to 5 is taken as the Gregorian code (a
   * leaky bucket of under 6 ms is meaningless) and leaks over that interval's length at {@code now}
   * in UTC; any other duration is milliseconds.
   */
  public static long leakyBucketAvailable(LeakyBucketState state, long now) {
    GregorianInterval interval = RequestValidator.intervalOf(state.duration());
    long period = interval == null ? state.duration() : UTC_CALENDAR.length(interval, now);
    return LeakyBucket.available(state, period, now);
  }

  private static final GregorianCalendarMath UTC_CALENDAR =
      new GregorianCalendarMath(java.time.ZoneOffset.UTC);
}
