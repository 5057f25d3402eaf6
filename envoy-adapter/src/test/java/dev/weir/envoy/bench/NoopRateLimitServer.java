package dev.weir.envoy.bench;

import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Benchmark tooling: a {@code ShouldRateLimit} server that answers OK at once without looking at
 * the request (the baseline of {@code scripts/bench-envoy.sh}), and a writer of the gRPC-framed
 * request body h2load sends.
 *
 * <p>Usage: {@code serve PORT} runs the server on 127.0.0.1 until killed; {@code request FILE}
 * writes a length-prefixed {@code RateLimitRequest} for domain {@code bench} with two descriptors.
 */
public final class NoopRateLimitServer {

  private NoopRateLimitServer() {}

  /** Runs the command in {@code args}. */
  public static void main(String[] args) throws Exception {
    if (args.length == 2 && args[0].equals("serve")) {
      serve(Integer.parseInt(args[1]));
    } else if (args.length == 2 && args[0].equals("request")) {
      writeRequest(Path.of(args[1]));
    } else {
      System.err.println("usage: NoopRateLimitServer serve PORT | request FILE");
      System.exit(2);
    }
  }

  private static void serve(int port) throws IOException, InterruptedException {
    RateLimitResponse ok =
        RateLimitResponse.newBuilder()
            .setOverallCode(RateLimitResponse.Code.OK)
            .addStatuses(
                RateLimitResponse.DescriptorStatus.newBuilder().setCode(RateLimitResponse.Code.OK))
            .addStatuses(
                RateLimitResponse.DescriptorStatus.newBuilder().setCode(RateLimitResponse.Code.OK))
            .build();
    Server server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port))
            .directExecutor()
            .addService(
                new RateLimitServiceGrpc.RateLimitServiceImplBase() {
                  @Override
                  public void shouldRateLimit(
                      RateLimitRequest request, StreamObserver<RateLimitResponse> observer) {
                    observer.onNext(ok);
                    observer.onCompleted();
                  }
                })
            .build()
            .start();
    System.out.println("noop ShouldRateLimit server on 127.0.0.1:" + server.getPort());
    server.awaitTermination();
  }

  /**
   * Returns the benchmark request: domain {@code bench}, descriptors {@code (user)} and {@code
   * (path, user)}.
   */
  static RateLimitRequest benchRequest() {
    return RateLimitRequest.newBuilder()
        .setDomain("bench")
        .addDescriptors(descriptor("user", "alice"))
        .addDescriptors(descriptor("path", "/api", "user", "alice"))
        .build();
  }

  private static RateLimitDescriptor descriptor(String... keyValues) {
    RateLimitDescriptor.Builder b = RateLimitDescriptor.newBuilder();
    for (int i = 0; i < keyValues.length; i += 2) {
      b.addEntries(
          RateLimitDescriptor.Entry.newBuilder().setKey(keyValues[i]).setValue(keyValues[i + 1]));
    }
    return b.build();
  }

  private static void writeRequest(Path file) throws IOException {
    byte[] message = benchRequest().toByteArray();
    try (OutputStream out = Files.newOutputStream(file)) {
      out.write(0);
      out.write(ByteBuffer.allocate(4).putInt(message.length).array());
      out.write(message);
    }
  }
}
