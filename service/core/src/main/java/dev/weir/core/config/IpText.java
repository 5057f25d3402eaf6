package dev.weir.core.config;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The text of an IP address as peers, Kubernetes and DNS tools spell it: dotted IPv4, and IPv6 in
 * its RFC 5952 text (lower case, the longest run of zero groups as {@code ::}, no zone).
 */
public final class IpText {
  private static final Pattern DOTTED_QUAD =
      Pattern.compile("(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)(\\.(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)){3}");
  private static final Pattern V6_CHARS = Pattern.compile("[0-9A-Fa-f:.]+");

  /** What a pod IP setting ({@code WEIR_K8S_POD_IP}) allows, as its errors say. */
  public static final String POD_IP_ALLOWED =
      "an IPv4 or IPv6 address, such as the downward API's status.podIP";

  private IpText() {}

  /**
   * Returns the IP literal {@code text} as peers spell it ({@link #of}), empty when it is no IP
   * literal.
   */
  public static Optional<String> canonical(String text) {
    return literal(text).map(IpText::of);
  }

  /**
   * Returns the text of {@code address} as peers spell it: dotted IPv4, or IPv6 in its RFC 5952
   * text without a zone.
   */
  public static String of(InetAddress address) {
    return address instanceof Inet6Address
        ? ipv6Text(address.getAddress())
        : address.getHostAddress();
  }

  /**
   * Returns the address {@code text} spells when it is an IP literal (dotted-quad IPv4, or IPv6
   * with or without brackets), empty otherwise; never asks a name resolver.
   */
  public static Optional<InetAddress> literal(String text) {
    String t = text.startsWith("[") && text.endsWith("]") ? text.substring(1, text.length() - 1) : text;
    boolean v4 = DOTTED_QUAD.matcher(t).matches();
    boolean v6 = !v4 && t.indexOf(':') >= 0 && t.indexOf('%') < 0 && V6_CHARS.matcher(t).matches();
    if (!v4 && !v6) {
      return Optional.empty();
    }
    try {
      // a dotted quad or a string with ':' is parsed as a literal, never looked up
      return Optional.of(InetAddress.getByName(t));
    } catch (UnknownHostException e) {
      return Optional.empty();
    }
  }

  /** Returns the RFC 5952 text of the 16 bytes of an IPv6 address. */
  static String ipv6Text(byte[] bytes) {
    int[] groups = new int[8];
    for (int i = 0; i < 8; i++) {
      groups[i] = (bytes[2 * i] & 0xff) << 8 | (bytes[2 * i + 1] & 0xff);
    }
    int bestStart = -1;
    int bestLength = 1;
    for (int i = 0; i < 8; ) {
      if (groups[i] != 0) {
        i++;
        continue;
      }
      int start = i;
      while (i < 8 && groups[i] == 0) {
        i++;
      }
      if (i - start > bestLength) {
        bestStart = start;
        bestLength = i - start;
      }
    }
    StringBuilder text = new StringBuilder(39);
    for (int i = 0; i < 8; i++) {
      if (i == bestStart) {
        text.append("::");
        i += bestLength - 1;
        continue;
      }
      if (text.length() > 0 && text.charAt(text.length() - 1) != ':') {
        text.append(':');
      }
      text.append(Integer.toHexString(groups[i]));
    }
    return text.toString();
  }
}
