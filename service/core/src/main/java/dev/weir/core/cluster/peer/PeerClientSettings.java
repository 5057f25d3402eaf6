package dev.weir.core.cluster.peer;

import java.time.Duration;

/**
 * How a {@link PeerClient} sends forwarded requests.
 *
 * @param batchLimit the most items per batch, 1..1000
 * @param batchWait how long items queued behind a batch in flight wait before an item that comes
 *     opens another call (no timer: items with none after them leave when a batch completes, at
 *     its answer or at {@code batchTimeout})
 * @param batchTimeout the deadline of each peer call
 * @param disableBatching send every item alone at once
 */
public record PeerClientSettings(
    int batchLimit, Duration batchWait, Duration batchTimeout, boolean disableBatching) {}
