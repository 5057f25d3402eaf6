package dev.weir.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.testkit.RawGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor.MethodType;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 14's log flood, on the real {@code weir.jar}: a client sends thousands of small messages
 * that are not the request type of the method they call, on every service of the client gRPC
 * port, and opens connections that send garbage instead of HTTP/2. Each call is answered {@code
 * INVALID_ARGUMENT} and the node's log stays a few lines long (it was one SEVERE stack trace per
 * call, 25 MB for 9 681 calls).
 */
class MalformedGrpcFloodJarIT {

  private static final int CALLS = 2000;
  private static final int GARBAGE_CONNECTIONS = 100;

  /** The most lines the flood may add to the node's stdout and stderr together. */
  private static final int MAX_NEW_LOG_LINES = 10;

  private static final List<Target> TARGETS =
      List.of(
          new Target("pb.gubernator.V1/GetRateLimits", MethodType.UNARY),
          new Target("pb.gubernator.V1/HealthCheck", MethodType.UNARY),
          new Target("envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit", MethodType.UNARY),
          new Target("grpc.health.v1.Health/Check", MethodType.UNARY),
          new Target(
              "grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
              MethodType.BIDI_STREAMING));

  @TempDir Path dir;

  private record Target(String method, MethodType type) {}

  @Test
  void malformedFlood_everyCallInvalidArgument_logStaysSmall() throws Exception {
    Path config = Files.writeString(dir.resolve("config.yaml"), "domain: shop\n");
    try (NodeProcess node = NodeProcess.start(Map.of("WEIR_ENVOY_CONFIG", config.toString()))) {
      node.awaitHealthy(HttpClient.newHttpClient());
      long linesBefore = lines(node);
      ManagedChannel channel =
          NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort).usePlaintext().build();
      Map<String, Integer> codes = new TreeMap<>();
      Random random = new Random(14);
      try {
        for (int i = 0; i < CALLS; i++) {
          Target target = TARGETS.get(i % TARGETS.size());
          Status status =
              RawGrpc.call(
                  channel, target.method(), target.type(), malformed(random), new Metadata());
          codes.merge(status.getCode().name(), 1, Integer::sum);
        }
      } finally {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
      for (int i = 0; i < GARBAGE_CONNECTIONS; i++) {
        sendGarbage(node.grpcPort, random);
      }
      node.awaitHealthy(HttpClient.newHttpClient());

      SoftAssertions soft = new SoftAssertions();
      soft.assertThat(codes).containsExactly(Map.entry("INVALID_ARGUMENT", CALLS));
      soft.assertThat(lines(node) - linesBefore)
          .as("lines logged during the flood:%n%s", tail(node))
          .isLessThanOrEqualTo(MAX_NEW_LOG_LINES);
      soft.assertAll();
    }
  }

  /**
   * Returns 4 to 250 bytes that no protobuf parser accepts: a length-delimited field 1 whose
   * length (16 383) runs past the end, followed by random bytes.
   */
  private static byte[] malformed(Random random) {
    byte[] body = new byte[4 + random.nextInt(247)];
    random.nextBytes(body);
    body[0] = 0x0a;
    body[1] = (byte) 0xff;
    body[2] = 0x7f;
    return body;
  }

  /** Opens a connection to {@code port}, writes up to 250 random bytes and closes it. */
  private static void sendGarbage(int port, Random random) throws Exception {
    byte[] bytes = new byte[1 + random.nextInt(250)];
    random.nextBytes(bytes);
    try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port)) {
      OutputStream out = socket.getOutputStream();
      out.write(bytes);
      out.flush();
      socket.setSoTimeout(2000);
      try {
        socket.getInputStream().readAllBytes();
      } catch (java.net.SocketTimeoutException | java.net.SocketException ignored) {
        // the node closes or resets the connection; either is fine
      }
    }
  }

  private static long lines(NodeProcess node) throws Exception {
    return node.stdout().lines().count() + node.stderr().lines().count();
  }

  private static String tail(NodeProcess node) throws Exception {
    List<String> all = new ArrayList<>(node.stderr().lines().toList());
    all.addAll(node.stdout().lines().toList());
    return String.join("\n", all.subList(Math.max(0, all.size() - 40), all.size()));
  }
}
