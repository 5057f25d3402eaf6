package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;

class WeirNodeStartFailureTest {

  private static ServerSocket bind(int port) throws Exception {
    ServerSocket socket = new ServerSocket();
    socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    return socket;
  }

  @Test
  void start_httpPortTaken_failsNamingItAndReleasesTheGrpcPortItHadBound() throws Exception {
    int grpcPort;
    try (ServerSocket grpcFree = bind(0)) {
      grpcPort = grpcFree.getLocalPort();
    }
    try (ServerSocket taken = bind(0)) {
      WeirConfig config =
          new WeirConfig(
              new HostPort("127.0.0.1", grpcPort),
              new HostPort("127.0.0.1", taken.getLocalPort()),
              new HostPort("127.0.0.1", grpcPort),
              1000,
              "info");

      assertThatThrownBy(() -> WeirNode.builder(config).start())
          .isInstanceOf(BindException.class)
          .hasMessageStartingWith(
              "cannot bind the HTTP listener at WEIR_HTTP_ADDRESS=127.0.0.1:"
                  + taken.getLocalPort());
    }

    assertThatCode(() -> bind(grpcPort).close()).doesNotThrowAnyException();
  }
}
