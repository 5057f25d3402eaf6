package dev.weir.core.testkit;

import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.Decision;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.store.BucketStore;
import dev.weir.core.time.Clock;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * An unbounded {@link BucketStore} over a map, for tests: a state is live while its {@link
 * BucketState#expireAt()} is after the update's time, for reads the clock's wall time; updates of
 * one key are atomic.
 */
public final class InMemoryBucketStore implements BucketStore {

  private final ConcurrentHashMap<String, BucketState> states = new ConcurrentHashMap<>();
  private final Clock clock;

  /** Creates an empty store whose expiry follows {@code clock}. */
  public InMemoryBucketStore(Clock clock) {
    this.clock = clock;
  }

  @Override
  public RateLimitResponse update(String key, long at, Function<BucketState, Decision> update) {
    AtomicReference<RateLimitResponse> response = new AtomicReference<>();
    states.compute(
        key,
        (k, prior) -> {
          Decision decision = update.apply(liveAt(prior, at));
          response.set(decision.response());
          return decision.next();
        });
    return response.get();
  }

  @Override
  public Optional<BucketState> get(String key) {
    return Optional.ofNullable(live(states.get(key)));
  }

  @Override
  public void put(String key, BucketState state) {
    states.put(key, state);
  }

  @Override
  public void remove(String key) {
    states.remove(key);
  }

  @Override
  public boolean remove(String key, BucketState expected) {
    return states.remove(key, expected);
  }

  @Override
  public void forEach(BiConsumer<String, BucketState> action) {
    states.forEach(
        (key, state) -> {
          if (live(state) != null) {
            action.accept(key, state);
          }
        });
  }

  @Override
  public long size() {
    return states.size();
  }

  private BucketState live(BucketState state) {
    return liveAt(state, clock.wallMillis());
  }

  private static BucketState liveAt(BucketState state, long at) {
    return state != null && state.expireAt() > at ? state : null;
  }
}
