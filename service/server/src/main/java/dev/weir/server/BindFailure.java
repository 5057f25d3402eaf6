package dev.weir.server;

import dev.weir.core.config.EnvVar;
import dev.weir.core.config.HostPort;
import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.UnknownHostException;
import java.nio.channels.UnresolvedAddressException;

/**
 * Names the listener and its setting in a failure to bind its address, so that a node with three
 * listeners reports e.g. {@code cannot bind the HTTP listener at WEIR_HTTP_ADDRESS=0.0.0.0:1050:
 * Address already in use} instead of a bare {@code BindException}.
 */
final class BindFailure {

  private BindFailure() {}

  /** The reason given when a listener's host does not resolve to an address. */
  static final String UNRESOLVED = "its host does not resolve";

  /**
   * Resolves {@code address}, binds it and releases it at once, so that a listener opened later
   * (after the warm-up) reports a host that does not resolve or a port in use now; binds nothing
   * for port 0, and ignores failures other than a failure to bind, which the listener itself
   * reports.
   *
   * @throws BindException naming the listener and {@code variable} when the host does not resolve
   *     or the address is in use
   */
  static void probe(String listener, EnvVar variable, HostPort address) throws BindException {
    InetSocketAddress bindAddress = address.toBindAddress();
    if (bindAddress.isUnresolved()) {
      throw of(listener, variable, address, new UnknownHostException(UNRESOLVED));
    }
    if (address.port() == 0) {
      return;
    }
    try (ServerSocket socket = new ServerSocket()) {
      socket.bind(bindAddress);
    } catch (BindException e) {
      throw of(listener, variable, address, e);
    } catch (IOException | RuntimeException e) {
      // Not a port in use: the listener's own bind reports it, with its context.
    }
  }

  /**
   * Returns whether {@code failure} is a failure to bind: a {@link BindException} or an {@link
   * UnresolvedAddressException} in its causes, or gRPC's {@code Failed to bind to address} (whose
   * cause is a native exception under epoll).
   */
  static boolean isBindFailure(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof BindException
          || t instanceof UnresolvedAddressException
          || (t.getMessage() != null && t.getMessage().startsWith("Failed to bind"))) {
        return true;
      }
    }
    return false;
  }

  /**
   * Returns a {@link BindException} saying that the {@code listener} listener cannot bind {@code
   * address}, set by {@code variable}, for the reason given by {@code failure}'s deepest cause.
   */
  static BindException of(String listener, EnvVar variable, HostPort address, IOException failure) {
    BindException named =
        new BindException(
            "cannot bind the "
                + listener
                + " listener at "
                + variable.name()
                + "="
                + address
                + ": "
                + reason(failure));
    named.initCause(failure);
    return named;
  }

  private static String reason(Throwable failure) {
    Throwable root = failure;
    while (root.getCause() != null) {
      root = root.getCause();
    }
    if (root instanceof UnresolvedAddressException) {
      return UNRESOLVED;
    }
    String message = root.getMessage() == null ? root.toString() : root.getMessage();
    int colon = message.lastIndexOf(": ");
    return message.startsWith("bind(") && colon >= 0 ? message.substring(colon + 2) : message;
  }
}
