/**
 * The peer protocol ({@code pb.gubernator.PeersV1}): clients that forward batches to a key's owner
 * ({@link dev.weir.core.cluster.peer.PeerClient}, its stream and codec) and send notices, the service and
 * listener that answer them ({@link dev.weir.core.cluster.peer.PeersService}, {@link
 * dev.weir.core.cluster.peer.PeerListener}), the check of what peers send ({@link
 * dev.weir.core.cluster.peer.PeerInputValidator}) and who is down ({@link
 * dev.weir.core.cluster.peer.PeerLiveness}, direct and indirect probes).
 */
package dev.weir.core.cluster.peer;
