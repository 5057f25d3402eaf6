package dev.weir.server;

import dev.weir.http.HttpAnswer;
import dev.weir.http.HttpRoute;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.HandlerRegistry;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerMethodDefinition;
import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.io.InputStream;

/**
 * What a node without {@code WEIR_ENVOY_CONFIG} or {@code WEIR_ENVOY_CONFIG_SOURCE=xds} answers to
 * Envoy's rate-limit calls: {@code POST /json} gets 404 and {@code ShouldRateLimit} gets {@code
 * UNIMPLEMENTED}, both saying that the Envoy adapter is off and how to turn it on, instead of a
 * bare "not found".
 */
final class EnvoyAdapterOff {

  /** The message of both answers. */
  static final String MESSAGE =
      "the Envoy rate-limit service is off on this node: set WEIR_ENVOY_CONFIG to a descriptor"
          + " YAML file or folder, or WEIR_ENVOY_CONFIG_SOURCE=xds (server"
          + " WEIR_ENVOY_XDS_SERVER_URL, default localhost:18000), to serve ShouldRateLimit and"
          + " POST /json (README.md#as-envoys-rate-limit-service)";

  /**
   * {@code ShouldRateLimit} with its messages left unread, built once: a method named after each
   * path a caller sends would give the server's metrics a label per path.
   */
  private static final ServerMethodDefinition<InputStream, InputStream> SHOULD_RATE_LIMIT =
      ServerMethodDefinition.create(
          MethodDescriptor.<InputStream, InputStream>newBuilder()
              .setType(MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(RateLimitServiceGrpc.getShouldRateLimitMethod().getFullMethodName())
              .setRequestMarshaller(Unread.INSTANCE)
              .setResponseMarshaller(Unread.INSTANCE)
              .build(),
          EnvoyAdapterOff::refuse);

  private EnvoyAdapterOff() {}

  /** Returns {@code POST /json}, answering 404 with code 5 ({@code NOT_FOUND}) and the message. */
  static HttpRoute jsonRoute() {
    HttpAnswer answer = HttpAnswer.error(404, Status.Code.NOT_FOUND.value(), MESSAGE);
    return HttpRoute.post("/json", call -> answer.completed());
  }

  /**
   * Returns the gRPC server's fallback registry: {@code
   * envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit} is closed with {@code
   * UNIMPLEMENTED} and {@link #MESSAGE}; other unknown methods get gRPC's own answer.
   */
  static HandlerRegistry grpcFallback() {
    String name = SHOULD_RATE_LIMIT.getMethodDescriptor().getFullMethodName();
    return new HandlerRegistry() {
      @Override
      public ServerMethodDefinition<?, ?> lookupMethod(String methodName, String authority) {
        return name.equals(methodName) ? SHOULD_RATE_LIMIT : null;
      }
    };
  }

  private static <Q, A> ServerCall.Listener<Q> refuse(ServerCall<Q, A> call, Metadata headers) {
    call.close(Status.UNIMPLEMENTED.withDescription(MESSAGE), new Metadata());
    return new ServerCall.Listener<>() {};
  }

  /** Passes messages through unread: the refused calls never look at them. */
  private enum Unread implements MethodDescriptor.Marshaller<InputStream> {
    INSTANCE;

    @Override
    public InputStream stream(InputStream value) {
      return value;
    }

    @Override
    public InputStream parse(InputStream stream) {
      return new ByteArrayInputStream(new byte[0]);
    }
  }
}
