package dev.weir.core.discovery;

/** Helpers for peer addresses of the form {@code host:port} ({@code [v6]:port} for IPv6 literals). */
public final class PeerAddress {
  private PeerAddress() {}

  /** Returns the peer address for {@code host} and {@code port}, bracketing IPv6 literals. */
  public static String of(String host, int port) {
    String h = host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host;
    return h + ":" + port;
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
