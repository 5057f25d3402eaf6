package dev.weir.core.config;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.util.Collections;
import java.util.Optional;

/**
 * Finds the address other nodes can reach this host at, used when the advertised address would
 * otherwise be a wildcard such as {@code 0.0.0.0}.
 */
@FunctionalInterface
public interface HostAddressResolver {

  /**
   * Returns this host's reachable address as a host string (IP literal or name); an IPv6 literal in
   * its RFC 5952 text without a zone, as Kubernetes and DNS spell it.
   */
  String resolve();

  /**
   * Returns the system resolver: the first IPv4 address of the first non-loopback interface that is
   * up, else the first non-loopback address of any kind, else the address of this host's name.
   */
  static HostAddressResolver system() {
    return () -> firstNonLoopback().orElseGet(HostAddressResolver::hostnameAddress);
  }

  private static Optional<String> firstNonLoopback() {
    String fallback = null;
    try {
      for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
        if (!nic.isUp() || nic.isLoopback()) {
          continue;
        }
        for (InetAddress address : Collections.list(nic.getInetAddresses())) {
          if (address.isLoopbackAddress() || address.isLinkLocalAddress()) {
            continue;
          }
          if (address instanceof Inet4Address) {
            return Optional.of(IpText.of(address));
          }
          if (fallback == null) {
            fallback = IpText.of(address);
          }
        }
      }
    } catch (SocketException e) {
      return Optional.empty();
    }
    return Optional.ofNullable(fallback);
  }

  private static String hostnameAddress() {
    try {
      return IpText.of(InetAddress.getLocalHost());
    } catch (UnknownHostException e) {
      return "127.0.0.1";
    }
  }
}
