package dev.weir.server;

import dev.weir.core.cluster.peer.auth.PeerSecret;
import dev.weir.core.cluster.peer.auth.PeerSettings;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import java.util.Optional;

/** Node configurations for tests. */
final class TestConfigs {

  private TestConfigs() {}

  /**
   * Returns a node on 127.0.0.1 whose gRPC and HTTP listeners take free ports (the advertised
   * address follows the gRPC port), with a cache of 1000 buckets.
   */
  static WeirConfig loopback() {
    return new WeirConfig(
        new HostPort("127.0.0.1", 0),
        new HostPort("127.0.0.1", 0),
        new HostPort("127.0.0.1", 0),
        1000,
        "info");
  }

  /**
   * Returns a node on 127.0.0.1 serving gRPC on {@code grpcPort}, advertised so, and HTTP on a free
   * port, with a cache of 1000 buckets.
   */
  static WeirConfig loopback(int grpcPort) {
    return new WeirConfig(
        new HostPort("127.0.0.1", grpcPort),
        new HostPort("127.0.0.1", 0),
        new HostPort("127.0.0.1", grpcPort),
        1000,
        "info");
  }

  /** Returns a peer listener on a free loopback port, authenticated by a secret the tests share. */
  static PeerSettings peers() {
    return new PeerSettings(
        new HostPort("127.0.0.1", 0),
        Optional.of(PeerSecret.of("weir-server-tests-peer-secret")),
        Optional.empty(),
        Optional.empty(),
        false);
  }
}
