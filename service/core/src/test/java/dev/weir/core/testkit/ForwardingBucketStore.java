package dev.weir.core.testkit;

import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.Decision;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.store.BucketStore;
import java.util.Optional;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * A {@link BucketStore} that passes every call to another store, for tests that override one
 * method (to hold a call until the test releases it, or to count calls).
 */
public class ForwardingBucketStore implements BucketStore {

  private final BucketStore delegate;

  /** Creates a store passing every call to {@code delegate}. */
  public ForwardingBucketStore(BucketStore delegate) {
    this.delegate = delegate;
  }

  @Override
  public RateLimitResponse update(String key, long at, Function<BucketState, Decision> update) {
    return delegate.update(key, at, update);
  }

  @Override
  public Optional<BucketState> get(String key) {
    return delegate.get(key);
  }

  @Override
  public void put(String key, BucketState state) {
    delegate.put(key, state);
  }

  @Override
  public void remove(String key) {
    delegate.remove(key);
  }

  @Override
  public boolean remove(String key, BucketState expected) {
    return delegate.remove(key, expected);
  }

  @Override
  public void forEach(BiConsumer<String, BucketState> action) {
    delegate.forEach(action);
  }

  @Override
  public long size() {
    return delegate.size();
  }
}
