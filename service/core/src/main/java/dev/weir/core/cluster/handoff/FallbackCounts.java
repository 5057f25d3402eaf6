package dev.weir.core.cluster.handoff;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.time.Clock;
import dev.weir.ring.HashRing;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * The keys this node counted for an owner it failed to hand them on to ({@link HandOn}'s fallback),
 * each remembered until its bucket is full again or that owner is reached, so that what this node
 * counted is then handed back to it: when the owner returns before this node took it off its ring,
 * no ring change hands those buckets back.
 *
 * <p>Design: at most {@link #LIMIT} keys are remembered (Caffeine's size eviction forgets others);
 * a key is remembered for one owner at a time (the last that failed).
 */
public final class FallbackCounts {

  /** How many keys are remembered at most. */
  public static final long LIMIT = 100_000;

  private final Clock clock;
  private final Cache<String, Held> keys;

  /** A key's owner and the epoch millisecond at which its bucket here is full again. */
  private record Held(String owner, long fullAt) {}

  /** Creates the memory, expiring each key at its bucket's reset time on {@code clock}. */
  public FallbackCounts(Clock clock) {
    this.clock = clock;
    this.keys =
        Caffeine.newBuilder()
            .ticker(clock::monotonicNanos)
            .maximumSize(LIMIT)
            .expireAfter(
                new Expiry<String, Held>() {
                  @Override
                  public long expireAfterCreate(String key, Held held, long now) {
                    return untilFull(held);
                  }

                  @Override
                  public long expireAfterUpdate(String key, Held held, long now, long current) {
                    return untilFull(held);
                  }

                  @Override
                  public long expireAfterRead(String key, Held held, long now, long current) {
                    return current;
                  }
                })
            .build();
  }

  private long untilFull(Held held) {
    return TimeUnit.MILLISECONDS.toNanos(Math.max(0, held.fullAt - clock.wallMillis()));
  }

  /**
   * Remembers the keys of {@code items}, answered here with {@code answers} (in order) after their
   * hand-on to {@code owner} failed. An item answered with an error counted nothing, and a GLOBAL
   * one was answered from this node's copy, whose hits reach the owner with the GLOBAL sync.
   */
  public void counted(List<RateLimitRequest> items, List<RateLimitResponse> answers, String owner) {
    for (int i = 0; i < items.size(); i++) {
      RateLimitResponse answer = answers.get(i);
      if (answer.error().isEmpty() && !items.get(i).has(Behavior.GLOBAL)) {
        keys.put(items.get(i).hashKey(), new Held(owner, answer.resetTime()));
      }
    }
  }

  /** Returns whether no key is remembered (then {@link #takeFor} has nothing to return). */
  public boolean isEmpty() {
    return keys.estimatedSize() == 0;
  }

  /**
   * Forgets the keys remembered for {@code owner} and returns those that {@code ring} still gives
   * it: the others moved with a ring change, whose hand-off sends them to their owner.
   */
  public Set<String> takeFor(String owner, HashRing ring) {
    Set<String> taken = new HashSet<>();
    for (Map.Entry<String, Held> e : keys.asMap().entrySet()) {
      Held held = e.getValue();
      if (held.owner.equals(owner)
          && keys.asMap().remove(e.getKey(), held)
          && ownedBy(ring, e.getKey(), owner)) {
        taken.add(e.getKey());
      }
    }
    return taken;
  }

  /**
   * Forgets the keys that {@code ring}, the ring after a change, does not give to the owner they
   * are remembered for: that change's hand-off sends them to their owner.
   */
  public void forgetMovedOn(HashRing ring) {
    keys.asMap().entrySet().removeIf(e -> !ownedBy(ring, e.getKey(), e.getValue().owner));
  }

  private static boolean ownedBy(HashRing ring, String key, String owner) {
    return !ring.isEmpty() && owner.equals(ring.ownerOf(key));
  }
}
