package dev.weir.server;

import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;

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
}
