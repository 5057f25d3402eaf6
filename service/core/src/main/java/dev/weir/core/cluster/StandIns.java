package dev.weir.core.cluster;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.weir.core.cluster.ring.StandInKeys;
import dev.weir.core.limiter.BucketCheck;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import java.util.Map;

/**
 * The answers a node gives, as a stand-in, for keys whose owners have not answered in time: while
 * the window of the owner's last answer for the key lasts, from what that answer left (each
 * stand-in hit taken from it); otherwise from a bucket of the node's own, named {@link
 * #PREFIX} + the item's name. Seeded that way, the keys of a paused owner admit at most what
 * their owner last reported left, per node standing in, rather than a full limit each.
 *
 * <p>Decides from the request's {@code created_at}; reads no clock.
 */
final class StandIns {

  /** The prefix of the name under which a node keeps its own stand-in bucket of a key. */
  static final String PREFIX = StandInKeys.PREFIX;

  /** The most keys whose owner's last answer is remembered; the least used are forgotten first. */
  static final int MAX_KEYS = 65_536;

  private final BucketCheck local;
  private final Cache<String, RateLimitResponse> lastAnswers;

  /** Creates the stand-ins, whose own buckets {@code local} checks. */
  StandIns(BucketCheck local) {
    this.local = local;
    this.lastAnswers = Caffeine.newBuilder().maximumSize(MAX_KEYS).build();
  }

  /**
   * Remembers {@code answer}, the owner's answer to {@code r}, unless the answer remembered for the
   * key is more recent: of a later window, or of the same window with less left (answers to one
   * key can arrive out of order, and an older one must not raise what is left).
   */
  void ownerAnswered(RateLimitRequest r, RateLimitResponse answer) {
    if (!answer.isError()) {
      lastAnswers
          .asMap()
          .merge(r.hashKey(), answer.withMetadata(Map.of()), StandIns::moreRecent);
    }
  }

  private static RateLimitResponse moreRecent(RateLimitResponse known, RateLimitResponse next) {
    if (next.resetTime() != known.resetTime()) {
      return next.resetTime() > known.resetTime() ? next : known;
    }
    return next.remaining() < known.remaining() ? next : known;
  }

  /** Returns the stand-in answer to {@code r}, with {@code metadata} (the owner, the stand-in mark). */
  RateLimitResponse answer(RateLimitRequest r, Map<String, String> metadata) {
    RateLimitResponse[] decided = new RateLimitResponse[1];
    if (!r.has(Behavior.RESET_REMAINING)) {
      lastAnswers
          .asMap()
          .computeIfPresent(
              r.hashKey(),
              (key, last) -> {
                if (last.resetTime() <= r.createdAt()) {
                  return null;
                }
                decided[0] = take(last, r);
                return decided[0];
              });
    }
    RateLimitResponse answer =
        decided[0] != null ? decided[0] : local.decide(r.withName(PREFIX + r.name()));
    return answer.withMetadata(metadata);
  }

  /** Returns the answer to {@code r} from {@code last}'s remaining count. */
  private static RateLimitResponse take(RateLimitResponse last, RateLimitRequest r) {
    long hits = Math.max(0, r.hits());
    if (hits <= last.remaining()) {
      return RateLimitResponse.of(
          Status.UNDER_LIMIT, last.limit(), last.remaining() - hits, last.resetTime());
    }
    long remaining = r.has(Behavior.DRAIN_OVER_LIMIT) ? 0 : last.remaining();
    return RateLimitResponse.of(Status.OVER_LIMIT, last.limit(), remaining, last.resetTime());
  }
}
