package dev.weir.core.grpc;

import io.grpc.BindableService;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

/**
 * A gRPC service added to a server before its implementation exists, so that the server can bind
 * its port (and tell others its address) first: calls before {@link #bind} are closed {@code
 * UNAVAILABLE}, later ones run on the bound implementation's handlers. Each method holds its own
 * handler, so a call costs one volatile read and no lookup.
 */
public final class LateBoundService {

  private final ServiceDescriptor descriptor;
  private final Map<String, LateHandler<?, ?>> handlers = new HashMap<>();
  private final ServerServiceDefinition definition;

  private LateBoundService(ServiceDescriptor descriptor) {
    this.descriptor = descriptor;
    ServerServiceDefinition.Builder builder = ServerServiceDefinition.builder(descriptor);
    for (MethodDescriptor<?, ?> method : descriptor.getMethods()) {
      builder.addMethod(late(method));
    }
    this.definition = builder.build();
  }

  /** Returns an unbound service with {@code descriptor}'s name and methods. */
  public static LateBoundService of(ServiceDescriptor descriptor) {
    return new LateBoundService(Objects.requireNonNull(descriptor, "descriptor"));
  }

  /** Returns the definition to add to the server builder. */
  public ServerServiceDefinition definition() {
    return definition;
  }

  /**
   * Sends every later call to {@code service}'s handlers.
   *
   * @throws IllegalArgumentException when {@code service} is not the service this one describes,
   *     or binds a method under another method descriptor (other marshallers) than this one's
   */
  public void bind(BindableService service) {
    ServerServiceDefinition bound = service.bindService();
    String name = bound.getServiceDescriptor().getName();
    if (!name.equals(descriptor.getName())) {
      throw new IllegalArgumentException(
          "expected an implementation of " + descriptor.getName() + ", got " + name);
    }
    for (ServerMethodDefinition<?, ?> method : bound.getMethods()) {
      LateHandler<?, ?> handler = handlers.get(method.getMethodDescriptor().getFullMethodName());
      if (handler == null) {
        throw new IllegalArgumentException(
            descriptor.getName() + " has no method " + method.getMethodDescriptor());
      }
      if (handler.method != method.getMethodDescriptor()) {
        throw new IllegalArgumentException(
            method.getMethodDescriptor().getFullMethodName()
                + " is bound with another method descriptor than this service's, whose"
                + " marshallers would hand the handler messages of another type");
      }
      handler.bind(method.getServerCallHandler());
    }
  }

  private <ReqT, RespT> ServerMethodDefinition<ReqT, RespT> late(
      MethodDescriptor<ReqT, RespT> method) {
    LateHandler<ReqT, RespT> handler = new LateHandler<>(method);
    handlers.put(method.getFullMethodName(), handler);
    return ServerMethodDefinition.create(method, handler);
  }

  private static final class LateHandler<ReqT, RespT> implements ServerCallHandler<ReqT, RespT> {
    private final MethodDescriptor<ReqT, RespT> method;
    private volatile ServerCallHandler<ReqT, RespT> target;

    LateHandler(MethodDescriptor<ReqT, RespT> method) {
      this.method = method;
    }

    @SuppressWarnings("unchecked")
    void bind(ServerCallHandler<?, ?> handler) {
      this.target = (ServerCallHandler<ReqT, RespT>) handler;
    }

    @Override
    public ServerCall.Listener<ReqT> startCall(ServerCall<ReqT, RespT> call, Metadata headers) {
      ServerCallHandler<ReqT, RespT> handler = target;
      if (handler == null) {
        call.close(
            Status.UNAVAILABLE.withDescription("the server is starting; retry"), new Metadata());
        return new ServerCall.Listener<>() {};
      }
      return handler.startCall(call, headers);
    }
  }
}
