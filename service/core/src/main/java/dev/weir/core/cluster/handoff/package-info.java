/**
 * Buckets moving when the ring changes: {@link dev.weir.core.cluster.handoff.HandOff} sends a node's
 * buckets to their new owners, {@link dev.weir.core.cluster.handoff.HandOn} passes on forwarded items for
 * keys that moved, {@link dev.weir.core.cluster.handoff.FallbackCounts} remembers the keys counted
 * here because passing them on failed, to send them to their owner once it is reached, and {@link
 * dev.weir.core.cluster.handoff.BucketMerge} merges a bucket received into the one held.
 */
package dev.weir.core.cluster.handoff;
