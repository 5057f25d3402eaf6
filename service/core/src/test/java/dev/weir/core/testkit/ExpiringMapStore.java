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

/** An unbounded {@link BucketStore} over a map whose states are live until their expiry on {@code clock}. */
public final class ExpiringMapStore implements BucketStore {

  private final ConcurrentHashMap<String, BucketState> states = new ConcurrentHashMap<>();
  private final Clock clock;

  /** Creates an empty store. */
  public ExpiringMapStore(Clock clock) {
    this.clock = clock;
  }

  @Override
  public RateLimitResponse update(String key, Function<BucketState, Decision> update) {
    AtomicReference<RateLimitResponse> response = new AtomicReference<>();
    states.compute(
        key,
        (k, prior) -> {
          Decision d = update.apply(live(prior));
          response.set(d.response());
          return d.next();
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
  public void forEach(BiConsumer<String, BucketState> action) {
    states.forEach(
        (k, s) -> {
          if (live(s) != null) {
            action.accept(k, s);
          }
        });
  }

  @Override
  public long size() {
    return states.size();
  }

  private BucketState live(BucketState s) {
    return s != null && s.expireAt() > clock.wallMillis() ? s : null;
  }
}
