package dev.weir.core.discovery;

import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;

/**
 * A source of cluster membership. Whatever its mechanism, it hands its listener the full set of peer
 * gRPC addresses (this node included) every time the set changes, and again when the {@linkplain
 * #peerAddress peer address} it reports for a member changes (the node then calls that member at
 * its new address).
 */
public interface PeerDiscovery extends AutoCloseable {

  /** Starts discovery; {@code listener} receives every full peer set from now on. */
  void start(Consumer<Set<String>> listener) throws Exception;

  /**
   * Returns the address of {@code member}'s peer listener when this mechanism learned it (a static
   * entry with {@code @peerPort}, an etcd registration), else empty.
   */
  default Optional<String> peerAddress(String member) {
    return Optional.empty();
  }

  /**
   * Returns whether this mechanism can only ever report this node: a fixed list of itself alone. A
   * node that cannot have peers opens no peer listener.
   */
  default boolean onlySelf() {
    return false;
  }

  /**
   * Returns whether a peer set this mechanism received has not yet reached its listener (it waits
   * for the end of a coalescing window), so the members the listener last got may be out of date.
   */
  default boolean holdingPeers() {
    return false;
  }

  /**
   * Returns the data center of every member this mechanism reports (etcd reports only the
   * registrations of this node's data center), or empty when the mechanism carries none.
   */
  default String dataCenter() {
    return "";
  }

  /** Returns an error describing why discovery is currently degraded, or empty when it is not. */
  default String problem() {
    return "";
  }

  /** Stops discovery and leaves the membership (for example revokes a lease). */
  @Override
  void close() throws Exception;
}
