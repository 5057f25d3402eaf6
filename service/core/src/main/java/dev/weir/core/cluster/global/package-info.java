/**
 * GLOBAL keys: {@link dev.weir.core.cluster.global.GlobalManager} sends the hits each node answered
 * locally to the key's owner and broadcasts the owner's state to every other node.
 */
package dev.weir.core.cluster.global;
