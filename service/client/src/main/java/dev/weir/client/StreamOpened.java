package dev.weir.client;

import io.grpc.Attributes;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientStreamTracer;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The mark of one call that it got a stream on a connected transport: from then on the node may
 * have received and counted it. A call that fails without the mark failed while its connection was
 * being made (refused, a TLS handshake that failed) and never left the client.
 */
final class StreamOpened implements ClientInterceptor {

  private final AtomicBoolean opened = new AtomicBoolean();

  private final ClientStreamTracer.Factory tracers =
      new ClientStreamTracer.Factory() {
        @Override
        public ClientStreamTracer newClientStreamTracer(
            ClientStreamTracer.StreamInfo info, Metadata headers) {
          return new ClientStreamTracer() {
            @Override
            public void streamCreated(Attributes transportAttributes, Metadata headers) {
              opened.set(true);
            }
          };
        }
      };

  @Override
  public <Q, R> ClientCall<Q, R> interceptCall(
      MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
    return next.newCall(method, options.withStreamTracerFactory(tracers));
  }

  /** Returns whether the call got a stream on a connected transport. */
  boolean opened() {
    return opened.get();
  }
}
