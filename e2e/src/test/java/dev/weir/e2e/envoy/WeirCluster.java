package dev.weir.e2e.envoy;

import dev.weir.e2e.NodeProcess;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc.RateLimitServiceBlockingStub;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * Weir server processes forming one cluster through static peers ({@code WEIR_STATIC_PEERS}, each
 * with its own peer port and the cluster's {@code WEIR_PEER_SECRET}), each with an Envoy
 * RateLimitService client channel.
 */
public final class WeirCluster implements AutoCloseable {
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(90);
  private static final long POLL_MILLIS = 200;
  private static final String PEER_SECRET = "weir-envoy-e2e-peer-secret";

  private static final Duration STOP_GRACE = Duration.ofSeconds(20);

  private final List<NodeProcess> nodes;
  private final List<ManagedChannel> channels;
  private final List<String> envoyConfigs;

  private WeirCluster(List<NodeProcess> nodes, List<String> envoyConfigs) {
    this.nodes = nodes;
    this.envoyConfigs = envoyConfigs;
    this.channels = new ArrayList<>();
    for (NodeProcess node : nodes) {
      channels.add(
          NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort()).usePlaintext().build());
    }
  }

  /**
   * Starts {@code size} nodes on free loopback ports, each knowing all of them as static peers and
   * serving the Envoy descriptor config at {@code envoyConfig}; {@code extraEnv} is added to every
   * node's environment.
   */
  public static WeirCluster start(
      int size, Path envoyConfig, Map<String, String> extraEnv, Path logDir) {
    try {
      List<int[]> ports = new ArrayList<>();
      for (int i = 0; i < size; i++) {
        ports.add(
            new int[] {NodeProcess.freePort(), NodeProcess.freePort(), NodeProcess.freePort()});
      }
      String peers =
          ports.stream()
              .map(p -> "127.0.0.1:" + p[0] + "@" + p[2])
              .collect(Collectors.joining(","));
      List<NodeProcess> nodes = new ArrayList<>();
      for (int i = 0; i < size; i++) {
        Map<String, String> env = new HashMap<>();
        env.put("WEIR_ADVERTISE_ADDRESS", "127.0.0.1:" + ports.get(i)[0]);
        env.putAll(extraEnv);
        env.put("WEIR_STATIC_PEERS", peers);
        env.put("WEIR_PEER_ADDRESS", "127.0.0.1:" + ports.get(i)[2]);
        env.put("WEIR_PEER_SECRET", PEER_SECRET);
        env.put("WEIR_ENVOY_CONFIG", envoyConfig.toString());
        nodes.add(
            NodeProcess.startIn(logDir.resolve(name(i)), ports.get(i)[0], ports.get(i)[1], env));
      }
      return new WeirCluster(nodes, Collections.nCopies(size, envoyConfig.toString()));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Returns the name of node {@code index} in messages and its log directory's name. */
  private static String name(int index) {
    return "weir-" + (index + 1);
  }

  /** Returns the nodes, in start order. */
  public List<NodeProcess> nodes() {
    return nodes;
  }

  /** Returns a RateLimitService stub talking to node {@code index} with a 5 s deadline per call. */
  public RateLimitServiceBlockingStub rls(int index) {
    return RateLimitServiceGrpc.newBlockingStub(channels.get(index))
        .withDeadlineAfter(5, TimeUnit.SECONDS);
  }

  /**
   * Waits until every node answers {@code probe} without a gRPC error, which needs its
   * RateLimitService up and, for descriptors owned elsewhere, its peers reachable. Fails with the
   * nodes' logs when a node exits or the cluster is not ready in time.
   */
  public void awaitReady(RateLimitRequest probe) {
    long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
    for (int i = 0; i < nodes.size(); i++) {
      StatusRuntimeException last = null;
      while (true) {
        if (!nodes.get(i).isAlive()) {
          throw new IllegalStateException(name(i) + " exited\n" + logs());
        }
        try {
          RateLimitServiceGrpc.newBlockingStub(channels.get(i))
              .withDeadlineAfter(2, TimeUnit.SECONDS)
              .shouldRateLimit(probe);
          break;
        } catch (StatusRuntimeException e) {
          if (e.getStatus().getCode() == Status.Code.UNIMPLEMENTED) {
            throw new IllegalStateException(
                name(i)
                    + " is up but does not serve "
                    + RateLimitServiceGrpc.SERVICE_NAME
                    + " (WEIR_ENVOY_CONFIG="
                    + envoyConfigOf(i)
                    + ")\n"
                    + logs(),
                e);
          }
          last = e;
        }
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(
              name(i) + " not ready after " + READY_TIMEOUT + ": " + last + "\n" + logs(), last);
        }
        sleep(POLL_MILLIS);
      }
    }
  }

  private String envoyConfigOf(int index) {
    return envoyConfigs.get(index);
  }

  /** Returns the tails of every node's log. */
  public String logs() {
    List<String> tails = new ArrayList<>();
    for (int i = 0; i < nodes.size(); i++) {
      tails.add(name(i) + ": " + nodes.get(i).logTail());
    }
    return String.join("\n\n", tails);
  }

  @Override
  public void close() {
    channels.forEach(ManagedChannel::shutdownNow);
    nodes.forEach(node -> node.stop(STOP_GRACE));
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for the cluster", e);
    }
  }
}
