/**
 * The cluster: a member's view of its peers ({@link dev.weir.core.cluster.Membership}), the routing of
 * each item to its owner ({@link dev.weir.core.cluster.ClusterRateLimitService}), the member that ties
 * them together ({@link dev.weir.core.cluster.ClusterNode}), its health and its stand-ins. Each other job
 * has a room of its own below: the ring, batching, the peer protocol, GLOBAL keys, hand-off and
 * snapshots, and no cycle joins any two of these packages ({@code ArchitectureTest}).
 */
package dev.weir.core.cluster;
