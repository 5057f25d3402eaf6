/**
 * Counters that survive a full restart: {@link dev.weir.core.cluster.snapshot.SnapshotDirectory} writes a
 * node's live buckets on a graceful stop and reads them back on start ({@link
 * dev.weir.core.cluster.snapshot.SnapshotFile}: format version, checksum, atomic rename).
 */
package dev.weir.core.cluster.snapshot;
