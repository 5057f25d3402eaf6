package dev.weir.server;

import java.util.List;
import java.util.Properties;

/**
 * The JVM system properties that turn off Netty's object recycler for {@code weir.jar}: set before
 * any Netty class loads, and only where the command line has not set them, so {@code
 * -Dio.grpc.netty.shaded.io.netty.recycler.maxCapacityPerThread=4096} (Netty's default) brings the
 * recycler back.
 *
 * <p>With the recycler on, every buffer the gRPC transport frees goes through a recycled cache
 * entry, and taking and returning those entries cost about 7 % of a node's CPU under {@code
 * ShouldRateLimit} load (JDK Flight Recorder); without it, a node answered about 8.5 % more calls on
 * one core, the young-generation collector taking the short-lived objects instead (see
 * docs/benchmarks.md).
 */
final class NettyRecycling {

  /** The recycler capacity properties: grpc-java's shaded Netty, then the unshaded Netty. */
  static final List<String> PROPERTIES =
      List.of(
          "io.grpc.netty.shaded.io.netty.recycler.maxCapacityPerThread",
          "io.netty.recycler.maxCapacityPerThread");

  private NettyRecycling() {}

  /** Sets each of {@link #PROPERTIES} that {@code properties} does not hold to {@code 0}. */
  static void turnOff(Properties properties) {
    for (String name : PROPERTIES) {
      if (properties.getProperty(name) == null) {
        properties.setProperty(name, "0");
      }
    }
  }
}
