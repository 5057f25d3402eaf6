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
 * a remembered owner's answer for the key has its window open, from what the one with the fewest
 * left left (each stand-in hit taken from it); otherwise from a bucket of the node's own, named
 * {@link #PREFIX} + the item's name. Seeded that way, the keys of a paused owner admit at most what
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
  private final Cache<String, Last> lastAnswers;

  /**
   * The owner's answers remembered for a key: {@code fewest}, the one with the fewest left of those
   * whose window was open at {@code at}, and {@code latest}, the one whose window ends last, which
   * stands in once {@code fewest}'s window is over (either may be both).
   */
  private record Last(RateLimitResponse fewest, RateLimitResponse latest, long at) {}

  /** Creates the stand-ins, whose own buckets {@code local} checks. */
  StandIns(BucketCheck local) {
    this.local = local;
    this.lastAnswers = Caffeine.newBuilder().maximumSize(MAX_KEYS).build();
  }

  /**
   * Remembers {@code answer}, the owner's answer to {@code r}: of the answers remembered for the key
   * whose windows are open at {@code r}'s {@code created_at}, the one with the fewest left is taken
   * from, so neither a later window with more left (a next owner's fresh bucket) nor an older answer
   * arriving late raises what is left; an answer whose window has ended is forgotten.
   */
  void ownerAnswered(RateLimitRequest r, RateLimitResponse answer) {
    if (!answer.isError()) {
      lastAnswers
          .asMap()
          .merge(r.hashKey(), new Last(answer, answer, r.createdAt()), StandIns::merged);
    }
  }

  private static Last merged(Last known, Last next) {
    return with(with(next, known.fewest()), known.latest());
  }

  /** Returns {@code last} with {@code a} also considered, if {@code a}'s window is open. */
  private static Last with(Last last, RateLimitResponse a) {
    long at = last.at();
    if (a.resetTime() <= at) {
      return last;
    }
    RateLimitResponse fewest = last.fewest();
    RateLimitResponse latest = last.latest();
    if (fewest.resetTime() <= at
        || a.remaining() < fewest.remaining()
        || (a.remaining() == fewest.remaining() && a.resetTime() > fewest.resetTime())) {
      fewest = a;
    }
    if (latest.resetTime() <= at
        || a.resetTime() > latest.resetTime()
        || (a.resetTime() == latest.resetTime() && a.remaining() < latest.remaining())) {
      latest = a;
    }
    return fewest == last.fewest() && latest == last.latest() ? last : new Last(fewest, latest, at);
  }

  /**
   * Returns the stand-in answer to {@code r}, with {@code metadata} (the owner, the stand-in mark);
   * hits admitted from the answer with the fewest left also count against the later window's
   * answer while it is open, so that window never admits more than its owner reported left.
   */
  RateLimitResponse answer(RateLimitRequest r, Map<String, String> metadata) {
    RateLimitResponse[] decided = new RateLimitResponse[1];
    if (!r.has(Behavior.RESET_REMAINING)) {
      lastAnswers
          .asMap()
          .computeIfPresent(
              r.hashKey(),
              (key, last) -> {
                RateLimitResponse from = last.fewest();
                if (from.resetTime() <= r.createdAt()) {
                  from = last.latest();
                  if (from.resetTime() <= r.createdAt()) {
                    return null;
                  }
                }
                decided[0] = take(from, r);
                RateLimitResponse latest = last.latest();
                if (from == latest) {
                  latest = decided[0];
                } else if (decided[0].status() == Status.UNDER_LIMIT
                    && latest.resetTime() > r.createdAt()) {
                  latest = take(latest, r);
                }
                return new Last(decided[0], latest, r.createdAt());
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
