package dev.weir.core.discovery;

import dev.weir.core.config.IpText;
import java.net.InetAddress;

/** Helpers for peer addresses of the form {@code host:port} ({@code [v6]:port} for IPv6 literals). */
public final class PeerAddress {
  private PeerAddress() {}

  /** Returns the peer address for {@code host} and {@code port}, bracketing IPv6 literals. */
  public static String of(String host, int port) {
    String h = host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host;
    return h + ":" + port;
  }

  /**
   * Returns the peer address for {@code address} and {@code port}: an IPv6 address in its RFC 5952
   * text (lower case, the longest run of zero groups as {@code ::}, no zone), the form Kubernetes
   * and most tools write, so that a member found by DNS is spelled as it advertises itself.
   */
  public static String of(InetAddress address, int port) {
    return of(IpText.of(address), port);
  }

  /** Returns the port of {@code address} ({@code host:port}), or throws naming the address. */
  public static int portOf(String address) {
    int colon = address.lastIndexOf(':');
    if (colon < 0 || colon == address.length() - 1) {
      throw new IllegalArgumentException("address '" + address + "' has no port: expected host:port");
    }
    try {
      return Integer.parseInt(address.substring(colon + 1));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "address '" + address + "' has an invalid port: expected host:port", e);
    }
  }
}
