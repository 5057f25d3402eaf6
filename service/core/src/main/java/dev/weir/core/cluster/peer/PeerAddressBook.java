package dev.weir.core.cluster.peer;

import dev.weir.core.config.HostPort;
import dev.weir.core.discovery.PeerAddress;
import dev.weir.core.discovery.PeerDiscovery;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * Where the peer listener of each member is: members are known by their advertised gRPC address
 * (the ring's key, reported in health and in {@code owner} metadata), and called on their peer
 * listener. The address a discovery mechanism reports for a member wins (a static entry with
 * {@code @peerPort}, an etcd registration's {@code peer_address}); otherwise the member's host with
 * the peer port every member shares, or, for members whose only gRPC server is the peer listener
 * (embedded members without a server of their own), the member's address itself.
 */
public final class PeerAddressBook {

  private final Function<String, Optional<String>> reported;
  private final int sharedPort;

  private PeerAddressBook(Function<String, Optional<String>> reported, int sharedPort) {
    this.reported = reported;
    this.sharedPort = sharedPort;
  }

  /**
   * Returns the book of a cluster whose members listen for peers on {@code peerPort} of their
   * advertised host, unless {@code discovery} reports otherwise.
   */
  public static PeerAddressBook sharedPort(PeerDiscovery discovery, int peerPort) {
    if (peerPort < 1 || peerPort > 65_535) {
      throw new IllegalArgumentException("peer port must be 1 to 65535, got " + peerPort);
    }
    return new PeerAddressBook(reporter(discovery), peerPort);
  }

  /**
   * Returns the book of a cluster whose members are called on their advertised address itself,
   * unless {@code discovery} reports otherwise.
   */
  public static PeerAddressBook sameAddress(PeerDiscovery discovery) {
    return new PeerAddressBook(reporter(discovery), 0);
  }

  private static Function<String, Optional<String>> reporter(PeerDiscovery discovery) {
    Objects.requireNonNull(discovery, "discovery");
    return discovery::peerAddress;
  }

  /** Returns the {@code host:port} of {@code member}'s peer listener. */
  public String peerAddress(String member) {
    Optional<String> known = reported.apply(member);
    if (known.isPresent()) {
      return known.get();
    }
    if (sharedPort == 0) {
      return member;
    }
    return PeerAddress.of(HostPort.parse(member).host(), sharedPort);
  }
}
