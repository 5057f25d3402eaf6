package dev.weir.envoy.rlqs;

import dev.weir.core.limiter.ByteBudget;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.BucketId;

/**
 * The bytes a held RLQS bucket counts for in its node's {@link ByteBudget} of {@code
 * WEIR_RLQS_MAX_NODE_BUCKET_BYTES}: a stream takes a new bucket's bytes before holding it and gives
 * them back when it lets the bucket go, so values a client makes up, however long or many, cannot
 * fill the heap.
 */
final class HeldBucketBytes {

  /**
   * The bytes every held bucket counts for besides its id and key: an estimate of the heap a bucket
   * of one short entry costs beyond them (its {@code StreamBucket}, the parsed {@code BucketId}
   * with its map, the stream's map entry, the key's {@code String} and the last action sent), so
   * that many small buckets fill the bound about as fast as they fill the heap.
   */
  static final long PER_BUCKET_BYTES = 512;

  private HeldBucketBytes() {}

  /**
   * Returns the bytes a held bucket of {@code id} named {@code name} counts for: {@link
   * #PER_BUCKET_BYTES}, its id's size as sent, and the characters of its name, the key the stream
   * keeps it under.
   */
  static long of(BucketId id, String name) {
    return PER_BUCKET_BYTES + id.getSerializedSize() + name.length();
  }
}
