package dev.weir.core.cluster;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.weir.core.cluster.ring.StandInKeys;
import dev.weir.core.limiter.BucketCheck;
import dev.weir.core.model.Algorithm;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The answers a node gives, as a stand-in, for keys whose owners have not answered in time: while
 * a remembered owner's answer for the key has its window open, from what the one with the fewest
 * left left (each stand-in hit taken from it); otherwise from a bucket of the node's own, named
 * {@link #PREFIX} + the item's name. Seeded that way, the keys of a paused owner admit at most what
 * their owner last reported left, per node standing in, rather than a full limit each.
 *
 * <p>An answer is remembered as the owner's state it reports: its {@code remaining}, and as its
 * status the one the owner's algorithm gives a request of 0 hits from that state (over the limit
 * for a fixed window counted past its limit, a token bucket whose hit found it empty, or a sliding
 * window above its limit; under it otherwise). Stand-in hits are then answered as that algorithm
 * answers them: a fixed window counts refused hits too, the others do not.
 *
 * <p>A token bucket's {@code DRAIN_OVER_LIMIT} answer over the limit with none left does not tell
 * whether the hits found the bucket empty (the owner then keeps it over the limit) or drained what
 * was left (the owner keeps it under the limit, with none left). It is taken as over the limit
 * only when the remembered state it follows had none left, as a stand-in's own drain is; so a
 * bucket that hits on other nodes emptied is remembered under the limit, and a check of 0 hits
 * is then admitted where the owner refuses it (hits are refused either way: none is left).
 *
 * <p>A {@code RESET_REMAINING} request resets what is remembered for its key: the owner's answer
 * to it replaces the states remembered, and a stand-in's answer to it (from the node's own bucket,
 * reset) forgets them. Answers are ordered by the tickets their forwards took when sent ({@link
 * #sending()}): an answer to a forward sent before the key's last reset is ignored, as it may
 * report the state the reset ended; an answer to one sent after the reset that arrives before the
 * reset's own answer is replaced by it, so stand-ins may then admit up to its hits more.
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
  private final AtomicLong tickets = new AtomicLong();

  /**
   * The owner's states remembered for a key: {@code fewest}, the one with the fewest left of those
   * whose window was open at {@code at}, and {@code latest}, the one whose window ends last, which
   * stands in once {@code fewest}'s window is over (either may be both; both null when none is
   * remembered since a stand-in's reset); {@code since} is the ticket of the key's last reset (0
   * when none), before which answers are ignored.
   */
  private record Last(RateLimitResponse fewest, RateLimitResponse latest, long at, long since) {}

  /** Creates the stand-ins, whose own buckets {@code local} checks. */
  StandIns(BucketCheck local) {
    this.local = local;
    this.lastAnswers = Caffeine.newBuilder().maximumSize(MAX_KEYS).build();
  }

  /**
   * Returns the ticket of a forward about to be sent, which orders its answer among the key's
   * resets: each ticket is greater than those before it.
   */
  long sending() {
    return tickets.incrementAndGet();
  }

  /**
   * Remembers {@code answer}, the owner's answer to {@code r}: of the answers remembered for the key
   * whose windows are open at {@code r}'s {@code created_at}, the one with the fewest left (a state
   * over the limit being fewer than one under it with as many) is taken from, so neither a later
   * window with more left (a next owner's fresh bucket) nor an older answer arriving late raises
   * what is left; an answer whose window has ended is forgotten. The answer to a {@code
   * RESET_REMAINING} request, {@code ticket} being its forward's ({@link #sending()}), replaces
   * what is remembered for the key instead, and answers to forwards sent before it are ignored
   * from then on.
   */
  void ownerAnswered(long ticket, RateLimitRequest r, RateLimitResponse answer) {
    if (answer.isError()) {
      return;
    }
    boolean reset = r.has(Behavior.RESET_REMAINING);
    lastAnswers
        .asMap()
        .compute(
            r.hashKey(),
            (key, known) -> {
              if (known != null && ticket < known.since()) {
                return known;
              }
              RateLimitResponse state = stateOf(r, answer, reset ? null : known);
              long since = reset ? ticket : known == null ? 0 : known.since();
              Last next = new Last(state, state, r.createdAt(), since);
              return reset || known == null || known.fewest() == null
                  ? next
                  : merged(known, next);
            });
  }

  /**
   * Returns the owner's state that {@code answer} to {@code r} reports: {@code answer} with the
   * status the owner's algorithm gives a request of 0 hits from there. A token bucket's {@code
   * DRAIN_OVER_LIMIT} answer over the limit with none left is over it when the state {@code known}
   * holds for {@code r}'s time had none left (as {@link #take} judges a stand-in's own drain), and
   * under it otherwise.
   */
  private static RateLimitResponse stateOf(
      RateLimitRequest r, RateLimitResponse answer, Last known) {
    if (answer.status() != Status.OVER_LIMIT) {
      return answer;
    }
    boolean over =
        switch (Algorithm.forNumber(r.algorithm()).orElse(Algorithm.FIXED_WINDOW)) {
          case FIXED_WINDOW -> true;
          case TOKEN_BUCKET ->
              r.hits() <= 0
                  || (answer.remaining() == 0
                      && (!r.has(Behavior.DRAIN_OVER_LIMIT) || knownEmpty(known, r.createdAt())));
          case SLIDING_WINDOW -> r.hits() <= 0;
          case LEAKY_BUCKET -> false;
        };
    return over
        ? answer
        : RateLimitResponse.of(
            Status.UNDER_LIMIT, answer.limit(), answer.remaining(), answer.resetTime());
  }

  /**
   * Returns whether the state a stand-in would take from at {@code at}, of those {@code known}
   * holds, has none left (false when none is open).
   */
  private static boolean knownEmpty(Last known, long at) {
    if (known == null || known.fewest() == null) {
      return false;
    }
    RateLimitResponse from = known.fewest().resetTime() > at ? known.fewest() : known.latest();
    return from.resetTime() > at && from.remaining() == 0;
  }

  /** Returns whether {@code a} has fewer left than {@code b}. */
  private static boolean fewer(RateLimitResponse a, RateLimitResponse b) {
    return a.remaining() < b.remaining()
        || (a.remaining() == b.remaining()
            && a.status() == Status.OVER_LIMIT
            && b.status() != Status.OVER_LIMIT);
  }

  /** Returns whether {@code a} and {@code b} have as many left. */
  private static boolean asMany(RateLimitResponse a, RateLimitResponse b) {
    return !fewer(a, b) && !fewer(b, a);
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
        || fewer(a, fewest)
        || (asMany(a, fewest) && a.resetTime() > fewest.resetTime())) {
      fewest = a;
    }
    if (latest.resetTime() <= at
        || a.resetTime() > latest.resetTime()
        || (a.resetTime() == latest.resetTime() && fewer(a, latest))) {
      latest = a;
    }
    return fewest == last.fewest() && latest == last.latest()
        ? last
        : new Last(fewest, latest, at, last.since());
  }

  /**
   * Returns the stand-in answer to {@code r}, whose forward has {@code ticket}, with {@code
   * metadata} (the owner, the stand-in mark); hits admitted from the state with the fewest left
   * also count against the later window's state while it is open, so that window never admits more
   * than its owner reported left. A {@code RESET_REMAINING} request is answered from this node's
   * own bucket, reset, and the owner's states remembered for the key are forgotten: until the
   * owner answers it, stand-ins answer from that bucket.
   */
  RateLimitResponse answer(long ticket, RateLimitRequest r, Map<String, String> metadata) {
    RateLimitResponse[] decided = new RateLimitResponse[1];
    if (r.has(Behavior.RESET_REMAINING)) {
      lastAnswers
          .asMap()
          .merge(
              r.hashKey(),
              new Last(null, null, r.createdAt(), ticket),
              (known, forgotten) -> ticket < known.since() ? known : forgotten);
    } else {
      lastAnswers
          .asMap()
          .computeIfPresent(
              r.hashKey(),
              (key, last) -> {
                RateLimitResponse from = last.fewest();
                if (from == null) {
                  return last;
                }
                if (from.resetTime() <= r.createdAt()) {
                  from = last.latest();
                  if (from.resetTime() <= r.createdAt()) {
                    return last.since() == 0
                        ? null
                        : new Last(null, null, r.createdAt(), last.since());
                  }
                }
                Taken taken = take(from, r);
                decided[0] = taken.answer();
                RateLimitResponse latest = last.latest();
                if (from == latest) {
                  latest = taken.state();
                } else if (taken.answer().status() == Status.UNDER_LIMIT
                    && latest.resetTime() > r.createdAt()) {
                  latest = take(latest, r).state();
                }
                return new Last(taken.state(), latest, r.createdAt(), last.since());
              });
    }
    RateLimitResponse answer =
        decided[0] != null ? decided[0] : local.decide(r.withName(PREFIX + r.name()));
    return answer.withMetadata(metadata);
  }

  /** The answer to a request taken from an owner's state, and the state after it. */
  private record Taken(RateLimitResponse answer, RateLimitResponse state) {}

  /**
   * Returns the answer to {@code r} from {@code state}, as {@code r}'s algorithm answers it: 0 hits
   * get the state's own status; hits within what is left get that status too (only a token bucket
   * keeps an over-the-limit status with some left) and are taken; more hits are refused, a fixed
   * window counting them (none left, over the limit from then on), a token bucket with none left
   * staying over the limit, and {@code DRAIN_OVER_LIMIT} leaving none.
   */
  private static Taken take(RateLimitResponse state, RateLimitRequest r) {
    long hits = Math.max(0, r.hits());
    if (hits == 0) {
      return new Taken(state, state);
    }
    if (hits <= state.remaining()) {
      RateLimitResponse after =
          RateLimitResponse.of(
              state.status(), state.limit(), state.remaining() - hits, state.resetTime());
      return new Taken(after, after);
    }
    Algorithm algorithm = Algorithm.forNumber(r.algorithm()).orElse(Algorithm.FIXED_WINDOW);
    boolean counted = algorithm == Algorithm.FIXED_WINDOW;
    boolean over = counted || (algorithm == Algorithm.TOKEN_BUCKET && state.remaining() == 0);
    long remaining = counted || r.has(Behavior.DRAIN_OVER_LIMIT) ? 0 : state.remaining();
    Status status = over ? Status.OVER_LIMIT : state.status();
    return new Taken(
        RateLimitResponse.of(Status.OVER_LIMIT, state.limit(), remaining, state.resetTime()),
        RateLimitResponse.of(status, state.limit(), remaining, state.resetTime()));
  }
}
