package dev.weir.core.testkit;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import java.util.concurrent.TimeUnit;

/**
 * A channel that is its delegate in everything, for test channels that change only what some calls
 * do: a subclass overrides {@link #newCall} and calls {@code super.newCall} for the calls it leaves
 * alone. (grpc-java's own forwarding channel is internal.)
 */
public abstract class ForwardingManagedChannel extends ManagedChannel {

  private final ManagedChannel delegate;

  /** Forwards everything to {@code delegate}. */
  protected ForwardingManagedChannel(ManagedChannel delegate) {
    this.delegate = delegate;
  }

  @Override
  public <Q, A> ClientCall<Q, A> newCall(MethodDescriptor<Q, A> method, CallOptions options) {
    return delegate.newCall(method, options);
  }

  @Override
  public String authority() {
    return delegate.authority();
  }

  @Override
  public ManagedChannel shutdown() {
    delegate.shutdown();
    return this;
  }

  @Override
  public boolean isShutdown() {
    return delegate.isShutdown();
  }

  @Override
  public boolean isTerminated() {
    return delegate.isTerminated();
  }

  @Override
  public ManagedChannel shutdownNow() {
    delegate.shutdownNow();
    return this;
  }

  @Override
  public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
    return delegate.awaitTermination(timeout, unit);
  }

  @Override
  public ConnectivityState getState(boolean requestConnection) {
    return delegate.getState(requestConnection);
  }

  @Override
  public void notifyWhenStateChanged(ConnectivityState source, Runnable callback) {
    delegate.notifyWhenStateChanged(source, callback);
  }

  @Override
  public void resetConnectBackoff() {
    delegate.resetConnectBackoff();
  }

  @Override
  public void enterIdle() {
    delegate.enterIdle();
  }
}
