package dev.weir.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.discovery.PeerDiscovery;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A member configured with port 0 holds the port it advertises from the moment it learns it: a
 * socket of another process that tries to take that port before the member starts (here, from the
 * discovery factory, which runs between learning the port and starting) cannot, so start-up cannot
 * fail. A member that probed a free port with a throwaway socket and bound it later would lose it.
 */
class WeirPortZeroTest {

  private static final String SECRET = "the-members-shared-secret";

  private final List<AutoCloseable> resources = new ArrayList<>();
  private final List<Integer> takenByIntruder = new ArrayList<>();

  @AfterEach
  void stop() throws Exception {
    for (int i = resources.size() - 1; i >= 0; i--) {
      resources.get(i).close();
    }
  }

  /** Binds {@code port} as another process would, keeping it; records it when that worked. */
  private void intrude(int port) {
    try {
      ServerSocket socket = new ServerSocket();
      socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
      resources.add(socket);
      takenByIntruder.add(port);
    } catch (IOException expected) {
      // the member holds the port
    }
  }

  /** A discovery that reports only {@code self} but may grow, so the member opens its listener. */
  private static class MayGrow implements PeerDiscovery {
    private final String self;
    boolean closed;

    MayGrow(String self) {
      this.self = self;
    }

    @Override
    public void start(Consumer<Set<String>> listener) {
      listener.accept(Set.of(self));
    }

    @Override
    public void close() {
      closed = true;
    }
  }

  @Test
  void start_ownServerAtPortZero_anotherSocketCannotTakeTheAdvertisedPort() throws Exception {
    WeirMember member =
        Weir.builder()
            .advertiseAddress("127.0.0.1:0")
            .peerSecret(SECRET)
            .discoveryForPeerPort(
                port -> {
                  intrude(port);
                  return new MayGrow("127.0.0.1:" + port);
                })
            .start();
    resources.add(member);

    assertThat(takenByIntruder).isEmpty();
    assertThat(member.peerPort()).hasValue(member.advertiseAddress().port());
    assertThat(member.grpcPort()).isEqualTo(member.advertiseAddress().port());
  }

  @Test
  void start_startedServerAndPeerListenerAtPortZero_anotherSocketCannotTakeEitherPort()
      throws Exception {
    Server server =
        NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
            .build()
            .start();
    resources.add(server::shutdownNow);
    WeirMember member =
        Weir.builder()
            .advertiseAddress("127.0.0.1:0")
            .server(server)
            .peerAddress("127.0.0.1:0")
            .peerSecret(SECRET)
            .discoveryForPeerPort(
                port -> {
                  intrude(port);
                  intrude(server.getPort());
                  return new MayGrow("127.0.0.1:" + server.getPort());
                })
            .start();
    resources.add(member);

    assertThat(takenByIntruder).isEmpty();
    assertThat(member.advertiseAddress().port()).isEqualTo(server.getPort());
    assertThat(member.grpcPort()).isEqualTo(server.getPort());
    assertThat(member.peerPort()).isPresent();
  }

  @Test
  void close_builtButNeverStarted_releasesThePeerListenerBoundForPortZero() throws Exception {
    List<Integer> peerPorts = new ArrayList<>();
    WeirMember member =
        Weir.builder()
            .advertiseAddress("127.0.0.1:0")
            .peerSecret(SECRET)
            .discoveryForPeerPort(
                port -> {
                  peerPorts.add(port);
                  return new MayGrow("127.0.0.1:" + port);
                })
            .build();

    member.close();

    intrude(peerPorts.get(0));
    assertThat(takenByIntruder).containsExactly(peerPorts.get(0));
  }

  @Test
  void build_peersWithoutSecret_failsClosingTheDiscoveryMadeAndReleasingThePort() {
    List<MayGrow> made = new ArrayList<>();
    List<Integer> peerPorts = new ArrayList<>();

    assertThatThrownBy(
            () ->
                Weir.builder()
                    .advertiseAddress("127.0.0.1:0")
                    .discoveryForPeerPort(
                        port -> {
                          peerPorts.add(port);
                          made.add(new MayGrow("127.0.0.1:" + port));
                          return made.get(0);
                        })
                    .build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("a member with peers needs an authenticated peer protocol");

    assertThat(made.get(0).closed).isTrue();
    intrude(peerPorts.get(0));
    assertThat(takenByIntruder).containsExactly(peerPorts.get(0));
  }
}
