/**
 * Batching: {@link dev.weir.core.cluster.batch.Batcher} groups the items bound for one destination into
 * batches while a call to it is in flight or within the submitting thread's round ({@link
 * dev.weir.core.cluster.batch.RoundEnd}); pure logic on an injected clock, with no I/O of its own.
 */
package dev.weir.core.cluster.batch;
