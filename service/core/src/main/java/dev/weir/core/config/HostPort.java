package dev.weir.core.config;

import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.Objects;
import javax.net.ssl.SNIHostName;

/**
 * A listen or peer address: a host (name, IPv4 or IPv6 literal, or empty for every interface) and a
 * port. Written {@code host:port}, or {@code [v6]:port} for IPv6 literals.
 *
 * @param host the host, without brackets; empty means every interface
 * @param port the port, 0 to 65535 (0 = any free port)
 */
public record HostPort(String host, int port) {

  /** The hosts a gRPC channel accepts, as error messages describe them. */
  public static final String GRPC_HOSTS =
      "a host name gRPC accepts: letters, digits, '-' and '.', each dot-separated part starting and"
          + " ending with a letter or digit and, when there are several, the last starting with a"
          + " letter (no '_'), with at most one trailing '.', or an IP address (IPv6 in brackets)";

  /** The names a TLS certificate is checked for, as error messages describe them. */
  public static final String TLS_NAMES =
      "a DNS name: letters, digits, '-' and '.', each dot-separated part 1 to 63 characters"
          + " starting and ending with a letter or digit (no '_'), with at most one trailing '.',"
          + " or an IP address (IPv6 in brackets)";

  private static final String SETTING_HOSTS =
      "a host is a name or IPv4 address of letters, digits, '.', '-' and '_', or an IPv6 address in"
          + " brackets";

  /** Creates an address. */
  public HostPort {
    Objects.requireNonNull(host, "host");
    if (port < 0 || port > 65_535) {
      throw new IllegalArgumentException("port out of range: " + port);
    }
  }

  /**
   * Parses {@code host:port}, {@code [v6]:port} or {@code :port}, the port in ASCII digits;
   * brackets around anything but an IPv6 address are refused. Throws {@link
   * IllegalArgumentException} naming what is wrong.
   */
  public static HostPort parse(String text) {
    String s = text.trim();
    int colon = s.lastIndexOf(':');
    if (colon < 0) {
      throw new IllegalArgumentException("missing ':port'");
    }
    String host = s.substring(0, colon);
    String port = s.substring(colon + 1);
    if (host.startsWith("[")) {
      if (!host.endsWith("]") || host.length() < 3) {
        throw new IllegalArgumentException("unbalanced brackets around the IPv6 host");
      }
      host = host.substring(1, host.length() - 1);
      if (!isIpv6(host)) {
        throw new IllegalArgumentException(
            "brackets hold only an IPv6 address, not '" + host + "'; write " + host + ":" + port);
      }
    } else if (host.contains(":")) {
      throw new IllegalArgumentException(
          "an IPv6 host must be written in brackets, e.g. [::1]:1051");
    }
    if (!GoSyntax.isAtoi(port)) {
      throw new IllegalArgumentException("port '" + port + "' is not a number");
    }
    int number;
    try {
      number = Integer.parseInt(port);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("port '" + port + "' is not a number");
    }
    if (number < 0 || number > 65_535) {
      throw new IllegalArgumentException("port " + number + " is outside 0-65535");
    }
    return new HostPort(host, number);
  }

  /**
   * Returns whether {@code host}, written in brackets, is an IPv6 address, with or without a zone
   * ({@code fe80::1%eth0}).
   */
  private static boolean isIpv6(String host) {
    int zone = host.indexOf('%');
    String address = zone < 0 ? host : host.substring(0, zone);
    return address.contains(":")
        && IpText.literal(address).isPresent()
        && (zone < 0 || zone < host.length() - 1);
  }

  /**
   * Parses a configured address as {@link #parse} does, and also refuses what is no single address:
   * a scheme ({@code http://}), a space, comma or semicolon (two addresses run together), or a host
   * name holding characters other than letters, digits, {@code .}, {@code -} and {@code _}. Throws
   * {@link IllegalArgumentException} naming what is wrong.
   */
  public static HostPort parseSetting(String text) {
    return parseSetting(text, SETTING_HOSTS);
  }

  private static HostPort parseSetting(String text, String allowedHosts) {
    String s = text.trim();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isWhitespace(c) || c == ',' || c == ';') {
        throw new IllegalArgumentException(
            "it holds "
                + (Character.isWhitespace(c) ? "a space" : "'" + c + "'")
                + "; one address has no spaces, commas or semicolons");
      }
    }
    int scheme = s.indexOf("://");
    if (scheme >= 0) {
      throw new IllegalArgumentException(
          "write host:port without a scheme such as '" + s.substring(0, scheme + 3) + "'");
    }
    HostPort parsed = parse(s);
    if (!s.startsWith("[")) {
      for (int i = 0; i < parsed.host.length(); i++) {
        char c = parsed.host.charAt(i);
        if (!isHostNameChar(c)) {
          throw new IllegalArgumentException(
              "host '"
                  + parsed.host
                  + "' holds '"
                  + c
                  + "'; "
                  + allowedHosts);
        }
      }
    }
    return parsed;
  }

  /**
   * Parses an address a gRPC channel connects to as {@link #parseSetting} does, a host holding a
   * character no host name holds being refused with what gRPC accepts ({@link #GRPC_HOSTS}) rather
   * than with the characters of any host; port 0 and the host's labels are not checked (see {@link
   * #parseGrpcTarget}).
   */
  public static HostPort parseGrpcSetting(String text) {
    return parseSetting(text, "give " + GRPC_HOSTS);
  }

  /**
   * Parses an address a gRPC channel connects to, as {@link #parseGrpcSetting} does, and also
   * refuses port 0 and a host grpc-java cannot open a channel to ({@link #requireGrpcHost}). Throws
   * {@link IllegalArgumentException} naming what is wrong and what is allowed ({@link
   * #GRPC_HOSTS}).
   */
  public static HostPort parseGrpcTarget(String text) {
    HostPort parsed = parseGrpcSetting(text);
    if (parsed.port == 0) {
      throw new IllegalArgumentException(
          "port 0 is no port to connect to; give a port from 1 to 65535");
    }
    return parsed.requireGrpcHost();
  }

  /**
   * Parses an address a gRPC channel connects to as {@link #parseGrpcTarget} does, an empty host
   * ({@code :18000}) meaning {@code localhost}, as Go's {@code net.Dial} takes it.
   */
  public static HostPort parseLocalGrpcTarget(String text) {
    String s = text.trim();
    return parseGrpcTarget(s.startsWith(":") ? "localhost" + s : s);
  }

  /**
   * Returns this address when grpc-java can open a channel to its host (an empty host, {@code _},
   * a label starting or ending with {@code -}, an empty label, or a last label of several starting
   * with a digit fail when the channel is built); the port is not checked. Throws {@link
   * IllegalArgumentException} naming the host and what is allowed ({@link #GRPC_HOSTS}).
   */
  public HostPort requireGrpcHost() {
    if (host.isEmpty()) {
      throw new IllegalArgumentException("the host is empty; give " + GRPC_HOSTS);
    }
    if (!grpcAccepts(this)) {
      throw new IllegalArgumentException(
          "host '" + host + "' is refused by gRPC; give " + GRPC_HOSTS);
    }
    return this;
  }

  /**
   * Returns whether grpc-java builds a channel to {@code address}: it forms the authority with
   * {@link URI}, which must find a server-based host in it.
   */
  private static boolean grpcAccepts(HostPort address) {
    return isGrpcHost(isIpv6(address.host) ? "[" + address.host + "]" : address.host);
  }

  /**
   * Returns whether {@code host}, a host name or IP address (IPv6 in brackets) without a port, is
   * one gRPC can call and check a TLS certificate for ({@link #GRPC_HOSTS}): {@link URI} must find
   * it whole as a server-based host. gRPC builds a channel to, or with the authority of, some hosts
   * this refuses ({@code a_b}, {@code a b}), but every TLS handshake of that channel fails.
   */
  public static boolean isGrpcHost(String host) {
    try {
      return !host.isEmpty() && host.equals(new URI("//" + host).getHost());
    } catch (URISyntaxException e) {
      return false;
    }
  }

  /**
   * Returns whether {@code name}, without a port, is one a TLS certificate is checked for ({@link
   * #TLS_NAMES}): an IP address (IPv6 in brackets), or an ASCII name the JDK sends as SNI ({@link
   * SNIHostName}) once one trailing '.' is removed. Unlike {@link #isGrpcHost}, it accepts a last
   * part starting with a digit ({@code weir-peers.1team}), which a TLS handshake checks as is.
   */
  public static boolean isTlsName(String name) {
    if (name.startsWith("[")) {
      return isGrpcHost(name);
    }
    String dns = name.endsWith(".") ? name.substring(0, name.length() - 1) : name;
    if (dns.isEmpty() || !dns.chars().allMatch(c -> c < 0x80)) {
      return false;
    }
    try {
      new SNIHostName(dns);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /** Returns whether {@code c} may be part of a host name: an ASCII letter or digit, '.', '-' or '_'. */
  public static boolean isHostNameChar(char c) {
    return (c >= 'a' && c <= 'z')
        || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9')
        || c == '.'
        || c == '-'
        || c == '_';
  }

  /**
   * Returns whether {@code entry}, one entry of a comma-separated setting, holds a space or a
   * {@code ';'}: two entries run together instead of being separated by a comma.
   */
  public static boolean runsTogether(String entry) {
    return entry.chars().anyMatch(c -> Character.isWhitespace(c) || c == ';');
  }

  /** Returns whether the host means every interface ({@code 0.0.0.0}, {@code ::} or empty). */
  public boolean isWildcard() {
    return host.isEmpty()
        || host.equals("0.0.0.0")
        || host.equals("::")
        || host.equals("0:0:0:0:0:0:0:0");
  }

  /**
   * Returns the socket address to bind: every interface for a wildcard host, else the host resolved
   * (names are looked up now).
   */
  public InetSocketAddress toBindAddress() {
    return isWildcard() ? new InetSocketAddress(port) : new InetSocketAddress(host, port);
  }

  /** Returns a copy with {@code newPort}. */
  public HostPort withPort(int newPort) {
    return new HostPort(host, newPort);
  }

  /** Returns a copy with {@code newHost}. */
  public HostPort withHost(String newHost) {
    return new HostPort(newHost, port);
  }

  /** Returns {@code host:port}, bracketing IPv6 literals. */
  @Override
  public String toString() {
    return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
  }
}
