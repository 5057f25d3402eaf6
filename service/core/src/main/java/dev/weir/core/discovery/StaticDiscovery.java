package dev.weir.core.discovery;

import dev.weir.core.config.GoSyntax;
import dev.weir.core.config.HostPort;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * A fixed peer list ({@code WEIR_PEER_DISCOVERY_TYPE=static}, {@code WEIR_STATIC_PEERS}): the
 * listener receives it once on start. An empty list means this node alone.
 *
 * <p>Each entry is a member's advertised gRPC address, {@code host:port}, optionally followed by
 * {@code @peerPort}, the port of its peer listener on the same host ({@code 127.0.0.1:2051@2052}):
 * needed when members do not all share one peer port, as several nodes on one host.
 */
public final class StaticDiscovery implements PeerDiscovery {

  private final String self;
  private final Set<String> peers;
  private final Map<String, String> peerAddresses;

  /**
   * Creates a discovery of {@code entries}; when empty, of {@code self} alone.
   *
   * @throws IllegalArgumentException naming an entry that is not {@code host:port[@peerPort]}
   */
  public StaticDiscovery(String self, Collection<String> entries) {
    this.self = self;
    Set<String> members = new LinkedHashSet<>();
    Map<String, String> explicit = new HashMap<>();
    for (String entry : entries) {
      Entry parsed = parse(entry);
      members.add(parsed.member());
      parsed.peerAddress().ifPresent(a -> explicit.put(parsed.member(), a));
    }
    this.peers = members.isEmpty() ? Set.of(self) : Set.copyOf(members);
    this.peerAddresses = Map.copyOf(explicit);
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
  public Optional<String> peerAddress(String member) {
    return Optional.ofNullable(peerAddresses.get(member));
  }

  @Override
  public boolean onlySelf() {
    return peers.equals(Set.of(self));
  }

  @Override
  public void close() {}

  /**
   * Splits {@code entry} ({@code host:port} or {@code host:port@peerPort}) into the member's
   * address and its peer listener's address, if given. A host gRPC refuses ({@link
   * HostPort#parseGrpcTarget}) is wrong: no call could reach that peer.
   *
   * @throws IllegalArgumentException naming the entry and what is wrong
   */
  public static Entry parse(String entry) {
    String text = entry.trim();
    if (HostPort.runsTogether(text)) {
      throw new IllegalArgumentException(
          "static peer '"
              + entry
              + "' is not host:port or host:port@peerPort: it holds "
              + (text.indexOf(';') >= 0 ? "';'" : "a space")
              + "; separate entries with commas");
    }
    int at = text.lastIndexOf('@');
    String member = at < 0 ? text : text.substring(0, at);
    HostPort address = parsed(entry, member, HostPort::parseGrpcSetting);
    if (address.host().isEmpty()) {
      throw new IllegalArgumentException(
          "static peer '" + entry + "' has no host; expected host:port or host:port@peerPort");
    }
    int port = address.port();
    if (port < 1 || port > 65_535) {
      throw new IllegalArgumentException(
          "static peer '" + entry + "' has port " + port + "; expected 1 to 65535");
    }
    parsed(entry, member, HostPort::parseGrpcTarget);
    if (at < 0) {
      return new Entry(member, Optional.empty());
    }
    String peerPortText = text.substring(at + 1);
    int peerPort;
    try {
      peerPort = GoSyntax.isAtoi(peerPortText) ? Integer.parseInt(peerPortText) : -1;
    } catch (NumberFormatException e) {
      peerPort = -1;
    }
    if (peerPort < 1 || peerPort > 65_535) {
      throw new IllegalArgumentException(
          "static peer '"
              + entry
              + "' has peer port '"
              + text.substring(at + 1)
              + "'; expected host:port@peerPort with a port of 1 to 65535");
    }
    String host = member.substring(0, member.lastIndexOf(':'));
    return new Entry(member, Optional.of(host + ":" + peerPort));
  }

  /**
   * Returns {@code member}, the host:port part of the static peer {@code entry}, read by {@code
   * parser}; its refusal is rethrown naming the entry.
   */
  private static HostPort parsed(
      String entry, String member, Function<String, HostPort> parser) {
    try {
      return parser.apply(member);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "static peer '"
              + entry
              + "' is not host:port or host:port@peerPort: "
              + e.getMessage(),
          e);
    }
  }

  /**
   * One parsed entry.
   *
   * @param member the member's advertised gRPC address, its key on the ring
   * @param peerAddress the address of its peer listener, when the entry names one
   */
  public record Entry(String member, Optional<String> peerAddress) {}
}
