package dev.weir.core.testkit;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Loopback ports that were free a moment ago, for tests that must name a port before a process
 * binds it. The kernel may hand the same just-released port to two consecutive {@code bind(0)}
 * calls, so a port is never handed out twice in one JVM.
 */
public final class FreePorts {

  private static final Set<Integer> HANDED_OUT = ConcurrentHashMap.newKeySet();

  private FreePorts() {}

  /** Returns a loopback port that was free a moment ago and that this JVM has not handed out. */
  public static int next() throws IOException {
    while (true) {
      try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
        int port = socket.getLocalPort();
        if (HANDED_OUT.add(port)) {
          return port;
        }
      }
    }
  }
}
