package dev.weir.server;

import java.util.List;
import java.util.Properties;

/**
 * The JVM system properties that turn off Netty's object recycler for {@code weir.jar}: set before
 * any Netty class loads, and only where the command line has not sized the recycler, so {@code
 * -Dio.grpc.netty.shaded.io.netty.recycler.maxCapacityPerThread=4096} (Netty's default) brings it
 * back.
 *
 * <p>With the recycler on, most pooled buffers the gRPC transport frees go through a recycled cache
 * entry, and about 7 % of a node's CPU under {@code ShouldRateLimit} load went to the recycler
 * (JDK Flight Recorder); without it, a node answered 8.6–9.0 % more calls on one core, the
 * young-generation collector taking the short-lived objects instead (see docs/benchmarks.md).
 */
final class NettyRecycling {

  /** The prefixes of each Netty's properties: grpc-java's shaded Netty, then the unshaded Netty. */
  static final List<String> NETTIES = List.of("io.grpc.netty.shaded.io.netty.", "io.netty.");

  private NettyRecycling() {}

  /**
   * Sets {@code recycler.maxCapacityPerThread} of each of {@link #NETTIES} to {@code 0} in {@code
   * properties}, unless they hold that property or {@code recycler.maxCapacity}, which Netty reads
   * when the first is unset.
   */
  static void turnOff(Properties properties) {
    for (String netty : NETTIES) {
      if (properties.getProperty(netty + "recycler.maxCapacityPerThread") == null
          && properties.getProperty(netty + "recycler.maxCapacity") == null) {
        properties.setProperty(netty + "recycler.maxCapacityPerThread", "0");
      }
    }
  }
}
