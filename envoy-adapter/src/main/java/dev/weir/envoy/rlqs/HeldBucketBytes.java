package dev.weir.envoy.rlqs;

import io.envoyproxy.envoy.service.rate_limit_quota.v3.BucketId;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The bytes of buckets all RLQS streams of a node hold together, bounded by {@code
 * WEIR_RLQS_MAX_NODE_BUCKET_BYTES}: a stream takes a new bucket's bytes before holding it and gives
 * them back when it lets the bucket go, so values a client makes up, however long or many, cannot
 * fill the heap. Thread-safe.
 */
final class HeldBucketBytes {

  /**
   * The bytes every held bucket counts for besides its id and key: an estimate of the heap a bucket
   * of one short entry costs beyond them (its {@code StreamBucket}, the parsed {@code BucketId}
   * with its map, the stream's map entry, the key's {@code String} and the last action sent), so
   * that many small buckets fill the bound about as fast as they fill the heap.
   */
  static final long PER_BUCKET_BYTES = 512;

  private final long most;
  private final AtomicLong held = new AtomicLong();

  /** Creates the count, allowing at most {@code most} bytes held. */
  HeldBucketBytes(long most) {
    this.most = most;
  }

  /**
   * Returns the bytes a held bucket of {@code id} named {@code name} counts for: {@link
   * #PER_BUCKET_BYTES}, its id's size as sent, and the characters of its name, the key the stream
   * keeps it under.
   */
  static long of(BucketId id, String name) {
    return PER_BUCKET_BYTES + id.getSerializedSize() + name.length();
  }

  /** Takes {@code bytes} and returns true, or returns false when they would pass the most. */
  boolean take(long bytes) {
    while (true) {
      long now = held.get();
      if (now + bytes > most) {
        return false;
      }
      if (held.compareAndSet(now, now + bytes)) {
        return true;
      }
    }
  }

  /** Gives back {@code bytes} taken before. */
  void give(long bytes) {
    held.addAndGet(-bytes);
  }

  /** Returns the bytes held now. */
  long held() {
    return held.get();
  }

  /** Returns the most bytes allowed. */
  long most() {
    return most;
  }
}
