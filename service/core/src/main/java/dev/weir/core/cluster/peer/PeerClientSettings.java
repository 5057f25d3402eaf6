package dev.weir.core.cluster.peer;

import java.time.Duration;

/**
 * How a {@link PeerClient} sends forwarded requests.
 *
 * @param batchLimit the most items per batch, 1..1000
 * @param batchWait how long the first queued item waits for others
 * @param batchTimeout the deadline of each peer call
 * @param disableBatching send every item alone at once
 */
public record PeerClientSettings(
    int batchLimit, Duration batchWait, Duration batchTimeout, boolean disableBatching) {}
