package dev.weir.core.discovery;

import java.util.Set;
import java.util.function.Consumer;

/**
 * A source of cluster membership. Whatever its mechanism, it hands its listener the full set of peer
 * gRPC addresses (this node included) every time the set changes.
 */
public interface PeerDiscovery extends AutoCloseable {

  /** Starts discovery; {@code listener} receives every full peer set from now on. */
  void start(Consumer<Set<String>> listener) throws Exception;

  /** Returns an error describing why discovery is currently degraded, or empty when it is not. */
  default String problem() {
    return "";
  }

  /** Stops discovery and leaves the membership (for example revokes a lease). */
  @Override
  void close() throws Exception;
}
