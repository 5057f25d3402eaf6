/**
 * The consistent-hash ring that names each key's owner ({@link dev.weir.ring.HashRing}, {@link
 * dev.weir.ring.PeerHash}): pure logic shared by the nodes and the ring-aware client, so that both
 * pick the same owner for a key.
 */
package dev.weir.ring;
