/**
 * The keys of stand-in buckets, which no ring ownership applies to; the ring itself is {@link
 * dev.weir.ring.HashRing} in the ring module, which the client shares.
 */
package dev.weir.core.cluster.ring;
