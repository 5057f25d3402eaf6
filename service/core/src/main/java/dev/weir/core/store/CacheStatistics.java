package dev.weir.core.store;

/** Live statistics of a bucket store, read each time metrics are scraped. */
public interface CacheStatistics {

  /** Returns an estimate of the number of buckets held. */
  long size();

  /** Returns how many reads and updates found a live bucket. */
  long hitCount();

  /** Returns how many reads and updates found no live bucket. */
  long missCount();

  /** Returns how many unexpired buckets were evicted because the store was full. */
  long evictionCount();
}
