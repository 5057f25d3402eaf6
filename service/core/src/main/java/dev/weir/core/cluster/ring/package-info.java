/**
 * The consistent-hash ring that names each key's owner ({@link dev.weir.core.cluster.ring.HashRing},
 * {@link dev.weir.core.cluster.ring.PeerHash}) and the keys of stand-in buckets; pure logic.
 */
package dev.weir.core.cluster.ring;
