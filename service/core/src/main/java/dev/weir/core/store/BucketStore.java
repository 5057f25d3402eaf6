package dev.weir.core.store;

import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.Decision;
import dev.weir.core.model.RateLimitResponse;
import java.util.Optional;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * A bounded, in-memory map from hash key to {@link BucketState} with per-key atomic updates. States
 * are dropped once their {@link BucketState#expireAt()} passes, and the least-used ones when the store
 * is full.
 */
public interface BucketStore {

  /**
   * Atomically replaces the state under {@code key} that is live at {@code at} (absent when none
   * or when its {@code expireAt} is at or before {@code at}) with the decision's next state,
   * removing the key when it is {@code null}, and returns the decision's response. {@code at} is
   * the time the update is decided at (a request's {@code created_at}), which may be before the
   * store's clock; a next state that has expired by the store's clock is kept until it is swept.
   * No other update of {@code key} interleaves.
   */
  RateLimitResponse update(String key, long at, Function<BucketState, Decision> update);

  /** Returns the live state under {@code key}. */
  Optional<BucketState> get(String key);

  /** Stores {@code state} under {@code key}, replacing what was there. */
  void put(String key, BucketState state);

  /** Removes {@code key}. */
  void remove(String key);

  /**
   * Removes {@code key} only if its state still equals {@code expected}, atomically with respect to
   * {@link #update}; returns whether it was removed. A key that is absent or expired by the store's
   * clock counts as changed.
   */
  boolean remove(String key, BucketState expected);

  /** Calls {@code action} with each live entry, a weakly consistent view. */
  void forEach(BiConsumer<String, BucketState> action);

  /** Returns an estimate of the number of live entries. */
  long size();

  /**
   * Returns the most buckets the store holds ({@code WEIR_CACHE_SIZE}); {@link Long#MAX_VALUE}
   * when it is not bounded.
   */
  default long capacity() {
    return Long.MAX_VALUE;
  }

  /**
   * Returns whether a new state stored under {@code key} now takes its place without evicting
   * another bucket: the key is held already, or the part of the store it goes to is not full.
   */
  default boolean hasRoomFor(String key) {
    return size() < capacity() || get(key).isPresent();
  }

  /**
   * Returns the part of the store {@code key} goes to, from 0: a store that evicts only when it is
   * full as a whole is one part, 0.
   */
  default int partOf(String key) {
    return 0;
  }

  /**
   * Returns the most keys {@code part} holds before it evicts: the whole {@linkplain #capacity()
   * capacity} for a store of one part.
   */
  default long partCapacity(int part) {
    return capacity();
  }

  /**
   * Returns the {@linkplain #capacity() capacity} at which a store of this kind holds {@code
   * buckets} keys without evicting any: {@code buckets} itself for a store that evicts only when it
   * is full as a whole.
   */
  default long capacityToHold(long buckets) {
    return buckets;
  }
}
