package dev.weir.core.discovery;

import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.function.Consumer;

/**
 * A fixed peer list ({@code WEIR_PEER_DISCOVERY_TYPE=static}, {@code WEIR_STATIC_PEERS}): the listener
 * receives it once on start. An empty list means this node alone.
 */
public final class StaticDiscovery implements PeerDiscovery {

  private final Set<String> peers;

  /** Creates a discovery of {@code peers}; when empty, of {@code self} alone. */
  public StaticDiscovery(String self, Collection<String> peers) {
    this.peers = peers.isEmpty() ? Set.of(self) : Set.copyOf(new LinkedHashSet<>(peers));
  }

  /** Returns the peer set this discovery reports. */
  public Set<String> peers() {
    return peers;
  }

  @Override
  public void start(Consumer<Set<String>> listener) {
    listener.accept(peers);
  }

  @Override
  public void close() {}
}
