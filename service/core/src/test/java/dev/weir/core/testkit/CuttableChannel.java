package dev.weir.core.testkit;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.util.function.BooleanSupplier;

/**
 * A channel that fails every call with {@code UNAVAILABLE} while {@code cut} holds, as a dropped
 * link would fail it (at once rather than after the deadline), and otherwise is its delegate: a
 * fault injected at the seam between two in-JVM nodes, so that one pair is cut while both still
 * reach the others. A call made before the cut (a long-lived forwarding stream) fails so on the
 * first message it sends while the cut holds, which does not reach the peer.
 */
public final class CuttableChannel extends ForwardingManagedChannel {

  private static final Status CUT = Status.UNAVAILABLE.withDescription("link cut by the test");

  private final BooleanSupplier cut;

  /** Wraps {@code delegate}, failing its calls while {@code cut} holds. */
  public CuttableChannel(ManagedChannel delegate, BooleanSupplier cut) {
    super(delegate);
    this.cut = cut;
  }

  @Override
  public <Q, A> ClientCall<Q, A> newCall(MethodDescriptor<Q, A> method, CallOptions options) {
    if (!cut.getAsBoolean()) {
      return new CutWhileOpen<>(super.newCall(method, options), cut);
    }
    return new ClientCall<>() {
      @Override
      public void start(Listener<A> listener, Metadata headers) {
        listener.onClose(CUT, new Metadata());
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

  /**
   * A call made before the cut: the first message it sends while {@code cut} holds is dropped and
   * the call cancelled, closing with {@code UNAVAILABLE} as a call over the cut link would.
   */
  private static final class CutWhileOpen<Q, A>
      extends ForwardingClientCall.SimpleForwardingClientCall<Q, A> {
    private final BooleanSupplier cut;
    private volatile boolean severed;

    CutWhileOpen(ClientCall<Q, A> delegate, BooleanSupplier cut) {
      super(delegate);
      this.cut = cut;
    }

    @Override
    public void start(Listener<A> listener, Metadata headers) {
      super.start(
          new ForwardingClientCallListener.SimpleForwardingClientCallListener<>(listener) {
            @Override
            public void onClose(Status status, Metadata trailers) {
              if (severed) {
                super.onClose(CUT, new Metadata());
              } else {
                super.onClose(status, trailers);
              }
            }
          },
          headers);
    }

    @Override
    public void sendMessage(Q message) {
      if (severed) {
        return;
      }
      if (cut.getAsBoolean()) {
        severed = true;
        delegate().cancel(CUT.getDescription(), null);
        return;
      }
      super.sendMessage(message);
    }

    @Override
    public void halfClose() {
      if (!severed) {
        super.halfClose();
      }
    }
  }
}
