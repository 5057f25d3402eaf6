package dev.weir.core.testkit;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.util.function.BooleanSupplier;

/**
 * A channel that fails every call with {@code UNAVAILABLE} while {@code cut} holds, as a dropped
 * link would fail it (at once rather than after the deadline), and otherwise is its delegate: a
 * fault injected at the seam between two in-JVM nodes, so that one pair is cut while both still
 * reach the others.
 */
public final class CuttableChannel extends ForwardingManagedChannel {

  private final BooleanSupplier cut;

  /** Wraps {@code delegate}, failing its calls while {@code cut} holds. */
  public CuttableChannel(ManagedChannel delegate, BooleanSupplier cut) {
    super(delegate);
    this.cut = cut;
  }

  @Override
  public <Q, A> ClientCall<Q, A> newCall(MethodDescriptor<Q, A> method, CallOptions options) {
    if (!cut.getAsBoolean()) {
      return super.newCall(method, options);
    }
    return new ClientCall<>() {
      @Override
      public void start(Listener<A> listener, Metadata headers) {
        listener.onClose(
            Status.UNAVAILABLE.withDescription("link cut by the test"), new Metadata());
      }

      @Override
      public void request(int numMessages) {}

      @Override
      public void cancel(String message, Throwable cause) {}

      @Override
      public void halfClose() {}

      @Override
      public void sendMessage(Q message) {}
    };
  }
}
