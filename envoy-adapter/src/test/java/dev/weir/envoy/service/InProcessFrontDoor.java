package dev.weir.envoy.service;

import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.io.IOException;

/**
 * A {@link ShouldRateLimitHandler} served as Envoy's {@code RateLimitService} on an in-process gRPC
 * server, with a blocking stub of Envoy's generated client calling it.
 */
final class InProcessFrontDoor implements AutoCloseable {

  private final Server server;
  private final ManagedChannel channel;

  /** Starts serving {@code handler}. */
  InProcessFrontDoor(ShouldRateLimitHandler handler) throws IOException {
    String name = InProcessServerBuilder.generateName();
    server =
        InProcessServerBuilder.forName(name)
            .directExecutor()
            .addService(new EnvoyRateLimitGrpcService(handler))
            .build()
            .start();
    channel = InProcessChannelBuilder.forName(name).directExecutor().build();
  }

  /** Returns a blocking stub calling the handler. */
  RateLimitServiceGrpc.RateLimitServiceBlockingStub stub() {
    return RateLimitServiceGrpc.newBlockingStub(channel);
  }

  /** Stops the channel and the server. */
  @Override
  public void close() {
    channel.shutdownNow();
    server.shutdownNow();
  }
}
