package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import io.grpc.Server;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.io.InputStream;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
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

  @Test
  void start_httpPortTakenWithoutWarmUp_failsBeforeItCallsAnyPeer() throws Exception {
    Queue<String> peerCalls = new ConcurrentLinkedQueue<>();
    Server peer = recordingServer(peerCalls);
    int grpcPort;
    int peerPort;
    try (ServerSocket grpcFree = bind(0);
        ServerSocket peerFree = bind(0)) {
      grpcPort = grpcFree.getLocalPort();
      peerPort = peerFree.getLocalPort();
    }
    try (ServerSocket taken = bind(0)) {
      WeirConfig config =
          new WeirConfig(
              new HostPort("127.0.0.1", grpcPort),
              new HostPort("127.0.0.1", taken.getLocalPort()),
              new HostPort("127.0.0.1", grpcPort),
              1000,
              "info");
      List<String> members =
          List.of(
              "127.0.0.1:" + grpcPort + "@" + peerPort,
              "127.0.0.2:1051@" + peer.getPort());

      assertThatThrownBy(
              () ->
                  WeirNode.builder(config)
                      .cluster(ClusterSettings.defaults().withStaticPeers(members))
                      .peers(
                          new dev.weir.core.cluster.peer.auth.PeerSettings(
                              new HostPort("127.0.0.1", peerPort),
                              TestConfigs.peers().secret(),
                              java.util.Optional.empty(),
                              java.util.Optional.empty(),
                              false))
                      .start())
          .isInstanceOf(BindException.class)
          .hasMessageStartingWith("cannot bind the HTTP listener at WEIR_HTTP_ADDRESS=");
    } finally {
      peer.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }

    assertThat(peerCalls).isEmpty();
  }

  /** Returns a server on 127.0.0.2 that records the method of every call and refuses it. */
  private static Server recordingServer(Queue<String> calls) throws Exception {
    return NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.2", 0))
        .fallbackHandlerRegistry(
            new io.grpc.HandlerRegistry() {
              @Override
              public ServerMethodDefinition<?, ?> lookupMethod(String method, String authority) {
                calls.add(method);
                return null;
              }
            })
        .build()
        .start();
  }
}
