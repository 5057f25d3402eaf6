package dev.weir.core.toplimited;

import dev.weir.core.engine.SaturatingMath;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A Space-Saving sketch (Metwally, Agrawal and El Abbadi, 2005): the heaviest keys of a weighted
 * stream kept in a fixed number of counters, whatever the number of distinct keys.
 *
 * <p>A key already counted adds its weight to its counter; a new key takes a free counter, or else
 * the counter with the least count, which it inherits: its count becomes that least count plus its
 * weight, and that least count is its {@linkplain Counted#error error}. So, with {@code k} counters
 * and {@code N} the total weight offered, every count overestimates its key's true weight by at
 * most its error, which is at most {@code N / k}, and every key whose true weight exceeds {@code N
 * / k} is counted. Each counter also sums a second quantity ({@code hits}) while it stays with its
 * key.
 *
 * <p>Pure logic, not thread-safe: an offer costs a hash lookup and a heap step of {@code log k},
 * and allocates only when a key takes a counter never used before (and a map entry for a new key).
 *
 * @param <K> the key type, with value equality
 */
public final class SpaceSaving<K> {

  /** One counter as {@link #counted()} reports it: an estimate of a key's weight, and its error. */
  public record Counted<K>(K key, long count, long error, long hits) {}

  private static final class Counter<K> {
    K key;
    long count;
    long error;
    long hits;
    int index;
  }

  private final int capacity;
  private final Map<K, Counter<K>> byKey;
  private final Counter<K>[] heap;
  private int size;
  private long total;

  /**
   * Creates an empty sketch of {@code capacity} counters.
   *
   * @throws IllegalArgumentException if {@code capacity} is less than 1
   */
  @SuppressWarnings("unchecked")
  public SpaceSaving(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("capacity must be at least 1, got " + capacity);
    }
    this.capacity = capacity;
    this.byKey = new HashMap<>(capacity * 2);
    this.heap = (Counter<K>[]) new Counter<?>[capacity];
  }

  /** Returns the number of counters. */
  public int capacity() {
    return capacity;
  }

  /** Returns the total weight offered since creation or the last {@link #clear()}. */
  public long total() {
    return total;
  }

  /**
   * Returns the least count when every counter is taken, else 0: an upper bound on the true weight
   * of any key not counted.
   */
  public long floor() {
    return size == capacity ? heap[0].count : 0;
  }

  /**
   * Counts {@code weight} (at least 1) for {@code key}, with {@code hits} added to its second sum,
   * which saturates at the ends of the long range.
   */
  public void offer(K key, long weight, long hits) {
    if (weight < 1) {
      throw new IllegalArgumentException("weight must be at least 1, got " + weight);
    }
    total += weight;
    Counter<K> c = byKey.get(key);
    if (c != null) {
      c.count += weight;
      c.hits = SaturatingMath.add(c.hits, hits);
      siftDown(c.index);
      return;
    }
    if (size < capacity) {
      c = heap[size] != null ? heap[size] : new Counter<>();
      c.key = key;
      c.count = weight;
      c.error = 0;
      c.hits = hits;
      c.index = size;
      heap[size++] = c;
      byKey.put(key, c);
      siftUp(c.index);
      return;
    }
    c = heap[0];
    byKey.remove(c.key);
    c.key = key;
    c.error = c.count;
    c.count += weight;
    c.hits = hits;
    byKey.put(key, c);
    siftDown(0);
  }

  /** Returns every counter, the highest count first (ties in no set order). */
  public List<Counted<K>> counted() {
    List<Counted<K>> out = snapshot();
    out.sort(Comparator.comparingLong((Counted<K> c) -> c.count()).reversed());
    return out;
  }

  /** Returns every counter in no set order: a copy, cheaper than {@link #counted()}. */
  public List<Counted<K>> snapshot() {
    List<Counted<K>> out = new ArrayList<>(size);
    for (int i = 0; i < size; i++) {
      Counter<K> c = heap[i];
      out.add(new Counted<>(c.key, c.count, c.error, c.hits));
    }
    return out;
  }

  /** Empties the sketch, keeping its counters for reuse. */
  public void clear() {
    for (int i = 0; i < size; i++) {
      Counter<K> c = heap[i];
      c.key = null;
      c.count = 0;
      c.error = 0;
      c.hits = 0;
    }
    byKey.clear();
    size = 0;
    total = 0;
  }

  private void siftUp(int i) {
    Counter<K> c = heap[i];
    while (i > 0) {
      int parent = (i - 1) >>> 1;
      Counter<K> p = heap[parent];
      if (p.count <= c.count) {
        break;
      }
      place(p, i);
      i = parent;
    }
    place(c, i);
  }

  private void siftDown(int i) {
    Counter<K> c = heap[i];
    int half = size >>> 1;
    while (i < half) {
      int child = 2 * i + 1;
      int right = child + 1;
      if (right < size && heap[right].count < heap[child].count) {
        child = right;
      }
      if (c.count <= heap[child].count) {
        break;
      }
      place(heap[child], i);
      i = child;
    }
    place(c, i);
  }

  private void place(Counter<K> c, int i) {
    heap[i] = c;
    c.index = i;
  }
}
